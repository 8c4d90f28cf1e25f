// thread_group.h — K processes stood in for by K threads: a Communicator whose allgather deposits
// each member's values, waits for all, and returns them concatenated in rank order.
#pragma once

#include <barrier>
#include <functional>
#include <thread>
#include <vector>

#include "occam/parallel.h"

namespace occam::testing {

class ThreadGroup {
 public:
  explicit ThreadGroup(int size) : size_(size), parts_(size), barrier_(size) {}

  class Member final : public Communicator {
   public:
    Member(ThreadGroup* group, int rank) : group_(group), rank_(rank) {}
    int rank() const override { return rank_; }
    int size() const override { return group_->size_; }
    std::vector<double> allgather(const std::vector<double>& mine) const override {
      group_->parts_[rank_] = mine;
      group_->barrier_.arrive_and_wait();
      std::vector<double> all;
      for (const std::vector<double>& part : group_->parts_) all.insert(all.end(), part.begin(), part.end());
      group_->barrier_.arrive_and_wait();  // nobody overwrites a part before everyone has read it
      return all;
    }

   private:
    ThreadGroup* group_;
    int rank_;
  };

  // Runs body(communicator) on every member, each in its own thread, and waits for all.
  void run(const std::function<void(const Communicator&)>& body) {
    std::vector<std::thread> members;
    for (int r = 0; r < size_; ++r) {
      members.emplace_back([this, r, &body] {
        const Member comm(this, r);
        body(comm);
      });
    }
    for (std::thread& m : members) m.join();
  }

 private:
  int size_;
  std::vector<std::vector<double>> parts_;
  std::barrier<> barrier_;
};

}  // namespace occam::testing
