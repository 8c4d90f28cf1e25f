// uci_data.h — the UCI regression benchmark's data sets and published train/test splits.
//
// The layout is that of Hernández-Lobato & Adams (2015) as distributed with the MC-dropout
// experiments (Gal & Ghahramani 2016): <dir>/<name>/data.txt (whitespace-separated numbers),
// index_features.txt, index_target.txt, index_train_<k>.txt / index_test_<k>.txt, n_splits.txt
// and n_hidden.txt, every index 0-based.
//
//   occam::uci::UciDataset d = occam::uci::load_dataset("/data/uci", "yacht");
//   occam::uci::UciSplit s = occam::uci::load_split(d, 0);
//   // s.train.X, s.train.Y, s.test.X, s.test.Y in the original units
#pragma once

#include <Eigen/Core>
#include <string>
#include <vector>

#include "occam/data.h"

namespace occam::uci {

struct UciDataset {
  std::string name;
  std::string dir;       // <data dir>/<name>
  Eigen::MatrixXd data;  // every column of data.txt
  std::vector<Eigen::Index> features;
  Eigen::Index target = 0;
  int num_splits = 0;             // n_splits.txt
  Eigen::Index hidden_units = 0;  // n_hidden.txt: the protocol's one hidden layer
};

struct UciSplit {
  std::string dataset;  // the data set's name
  int index = 0;
  Dataset train;  // original units
  Dataset test;
};

// Reads <data_dir>/<name>. Throws Error(kIo) for a missing file and Error(kInvalidInput), naming
// file and line, for a malformed one or an index out of range.
UciDataset load_dataset(const std::string& data_dir, const std::string& name);

// The rows of split k. Throws Error(kInvalidArgument) for k outside [0, num_splits) and
// Error(kInvalidInput) for an index out of range or train/test sets that overlap.
UciSplit load_split(const UciDataset& dataset, int k);

// The names of the sub-directories of data_dir that hold a data.txt, sorted.
std::vector<std::string> list_datasets(const std::string& data_dir);

// A whitespace-separated numeric matrix (every row the same length). Throws as load_dataset does.
Eigen::MatrixXd read_whitespace_matrix(const std::string& path);

}  // namespace occam::uci
