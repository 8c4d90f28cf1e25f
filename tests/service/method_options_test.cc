// The table of method options (occam/method_options.h): method_from_json and method_to_json are
// inverses for every method, every option reaches the field it names, every option has a flag on
// the command line and a Python keyword or says why not, and a bad value is refused naming the
// option as the user typed it.

#include "occam/method_options.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <string>

#include "occam/status.h"
#include "testing/cli_runner.h"
#include "testing/temp_dir.h"

namespace occam {
namespace {

using nlohmann::json;

// For each method, options other than its defaults (several for laplace: its MAP on minibatches
// and the online loop have options of their own).
std::vector<json> non_default_options() {
  return {
      {{"method", "laplace"},
       {"hyper", "quick"},
       {"hessian", "exact"},
       {"optimizer", "lbfgs"},
       {"max_iterations", 77},
       {"gradient_tolerance", 1e-7},
       {"hyper_gradient_tolerance", 1e-5},
       {"max_hyper_iterations", 12},
       {"evidence_loop", "outer"},
       {"threads", 2},
       {"seed", 9}},
      {{"method", "laplace"},
       {"hessian_structure", "diag"},
       {"optimizer", "adam"},
       {"epochs", 9},
       {"batch_size", 32},
       {"learning_rate", 0.002}},
      {{"method", "laplace"},
       {"evidence_loop", "online"},
       {"hessian_structure", "kron"},
       {"optimizer", "sgd"},
       {"epochs", 7},
       {"batch_size", 16},
       {"learning_rate", 0.01},
       {"lr_schedule", "cosine"},
       {"burn_in", 2},
       {"evidence_every", 3},
       {"hyper_steps", 4},
       {"curvature_rows", 200},
       {"polish", true}},
      {{"method", "laplace"}, {"evidence_loop", "joint"}, {"start_rows", 500}, {"checkpoint", "ascent.json"}},
      {{"method", "laplace"}, {"noise_model", "network"}, {"noise_refits", 3}},
      {{"method", "laplace"}, {"committee", 3}, {"committee_weighting", "equal"}, {"committee_dir", "members"}},
      {{"method", "map"},
       {"hyper", "fixed"},
       {"optimizer", "newton"},
       {"max_iterations", 30},
       {"threads", 3},
       {"seed", 4}},
      {{"method", "map"}, {"optimizer", "adam"}, {"epochs", 11}, {"batch_size", 64}, {"learning_rate", 0.003}},
      {{"method", "vi"},
       {"hyper", "elbo-closed"},
       {"family", "lowrank:2"},
       {"mc_samples", 3},
       {"batch_size", 10},
       {"vi_iterations", 50},
       {"learning_rate", 0.05},
       {"vi_tolerance", 1e-3},
       {"hessian", "exact"},
       {"optimizer", "lm"},
       {"max_iterations", 40},
       {"seed", 5}},
      {{"method", "nuts"},
       {"chains", 2},
       {"warmup", 10},
       {"draws", 20},
       {"thin", 2},
       {"save_warmup", true},
       {"checkpoint_every", 5},
       {"init", "prior"},
       {"init_optimizer", "lbfgs"},
       {"parameterization", "noncentered"},
       {"hyper", "fixed"},
       {"hyper_shape", 1.5},
       {"hyper_rate", 0.5},
       {"metric", "dense"},
       {"step_size", 0.3},
       {"target_accept", 0.9},
       {"max_depth", 6},
       {"threads", 1},
       {"seed", 3}},
      {{"method", "hmc"}, {"leapfrog_steps", 5}, {"jitter", 0.1}, {"precondition", "laplace"}, {"init", "laplace"}},
      {{"method", "metropolis"}, {"metric", "unit"}, {"target_accept", 0.3}},
      {{"method", "mclmc"},
       {"integrator", "leapfrog"},
       {"trajectory_length", 2.5},
       {"energy_variance", 1e-3},
       {"max_steps", 64}},
      {{"method", "mams"},
       {"integrator", "leapfrog"},
       {"trajectory_length", 1.5},
       {"max_steps", 32},
       {"target_accept", 0.85}},
      {{"method", "sgld"},
       {"step_size", 1e-3},
       {"batch_size", 8},
       {"cycles", 2},
       {"exploration", 0.3},
       {"gibbs_every", 2},
       {"precondition", "rmsprop"}},
      {{"method", "sghmc"}, {"step_size", 1e-3}, {"friction", 3.0}},
  };
}

TEST(MethodOptions, ToJsonThenFromJsonGivesTheSameOptionsForEveryMethod) {
  for (const std::string& method : method_names()) {
    const json defaults = method_to_json(default_method(method));
    EXPECT_EQ(defaults.at("method"), method);
    // sgld and sghmc have no step size until one is given: their defaults are refused.
    if (method == "sgld" || method == "sghmc") continue;
    EXPECT_EQ(method_to_json(method_from_json(defaults)), defaults) << method;
    EXPECT_EQ(method_to_json(method_from_json({{"method", method}})), defaults) << method;
  }
  for (const json& given : non_default_options()) {
    const MethodOptions options = method_from_json(given);
    // Every option given reads back as given: it reached a field of the method's options.
    for (const auto& [key, value] : given.items()) {
      if (key != "method") {
        EXPECT_EQ(find_method_option(key)->read(options), value) << key << " in " << given.dump();
      }
    }
    const json written = method_to_json(options);
    for (const auto& [key, value] : given.items()) {
      // The run settings (threads, checkpoint_every) are not reported: no number depends on them.
      if (key == "method" || find_method_option(key)->reported) {
        EXPECT_EQ(written.at(key), value) << key;
      }
    }
    EXPECT_EQ(method_to_json(method_from_json(written)), written) << given.dump();
  }
}

// Each key is accepted by method_from_json (a Python keyword) and written by method_to_json.
TEST(MethodOptions, EveryOptionOfTheTableIsReadAndWrittenByOneOfTheCases) {
  std::set<std::string> covered;
  for (const json& given : non_default_options()) {
    for (const auto& [key, value] : given.items()) covered.insert(key);
  }
  for (const MethodOption& o : method_option_table()) EXPECT_TRUE(covered.count(o.key)) << o.key;
}

TEST(MethodOptions, PythonKeywordsReachTheFieldsTheyName) {
  const auto mclmc = std::get<SamplingMethod>(method_from_json({{"method", "mclmc"},
                                                                {"integrator", "leapfrog"},
                                                                {"trajectory_length", 2.5},
                                                                {"max_steps", 64},
                                                                {"energy_variance", 1e-3},
                                                                {"checkpoint_every", 7},
                                                                {"save_warmup", true},
                                                                {"init_optimizer", "lbfgs"}}));
  EXPECT_EQ(mclmc.sampler.microcanonical.integrator, mcmc::IsokineticIntegrator::kLeapfrog);
  EXPECT_EQ(mclmc.sampler.microcanonical.trajectory_length, 2.5);
  EXPECT_EQ(mclmc.sampler.microcanonical.max_steps, 64);
  EXPECT_EQ(mclmc.sampler.microcanonical.energy_variance, 1e-3);
  EXPECT_EQ(mclmc.sampler.checkpoint_every, 7);
  EXPECT_TRUE(mclmc.sampler.save_warmup);
  EXPECT_EQ(mclmc.chains.map_optimizer, Optimizer::kLbfgs);
  EXPECT_TRUE(mclmc.chains.gibbs);  // the front ends' default

  // The names that mean "the evidence", and VI's names of its hyperparameter updates.
  EXPECT_EQ(std::get<LaplaceMethod>(method_from_json({{"hyper", "empirical-bayes"}})).evidence.strategy,
            HyperStrategy::kEvidence);
  EXPECT_EQ(
      std::get<VariationalMethod>(method_from_json({{"method", "vi"}, {"hyper", "elbo-closed"}})).variational.hyper,
      VariationalHyper::kClosedForm);
  // A step size of 0 is the kernel's: 1 for NUTS, 2.38/√W (0 here) for Metropolis.
  EXPECT_EQ(
      std::get<SamplingMethod>(method_from_json({{"method", "nuts"}, {"step_size", 0}})).sampler.initial_step_size,
      1.0);
  EXPECT_EQ(std::get<SamplingMethod>(method_from_json({{"method", "metropolis"}})).sampler.initial_step_size, 0.0);
  // The minibatch MAP takes the epochs as its iterations, the online loop the MAP's seed.
  const auto adam = std::get<LaplaceMethod>(method_from_json({{"optimizer", "adam"}, {"epochs", 9}, {"seed", 4}}));
  EXPECT_EQ(adam.evidence.map.max_iterations, 9);
  EXPECT_EQ(adam.evidence.online.minibatch.seed, 4u);
}

TEST(MethodOptions, DefaultsAreTheOptionStructsOwn) {
  EXPECT_EQ(find_method_option("max_depth")->default_value("nuts"), mcmc::NutsOptions{}.max_depth);
  EXPECT_EQ(find_method_option("max_steps")->default_value("mclmc"), mcmc::MicrocanonicalOptions{}.max_steps);
  EXPECT_EQ(find_method_option("mc_samples")->default_value("vi"), VariationalOptions{}.mc_samples);
  EXPECT_EQ(find_method_option("max_iterations")->default_value("laplace"), MapOptions{}.max_iterations);
  EXPECT_EQ(find_method_option("hyper")->default_value("laplace"), "evidence");
  EXPECT_EQ(find_method_option("hyper")->default_value("vi"), "elbo");
  EXPECT_EQ(find_method_option("hyper")->default_value("nuts"), "gibbs");
  EXPECT_TRUE(find_method_option("max_depth")->default_value("hmc").is_null());
}

TEST(MethodOptions, EveryOptionHasAFlagAndAKeywordOrSaysWhyNot) {
  for (const MethodOption& o : method_option_table()) {
    EXPECT_FALSE(o.methods.empty()) << o.key;
    EXPECT_FALSE(std::string(o.help).empty()) << o.key;
    EXPECT_TRUE(o.flag != nullptr || (o.no_flag != nullptr && *o.no_flag != '\0'))
        << o.key << ": no flag and no reason";
    // Python's keyword is the key, which method_from_json reads (the round trips above take every key).
    EXPECT_TRUE(o.no_keyword == nullptr || *o.no_keyword != '\0') << o.key << ": no keyword and no reason";
  }
}

// Every flag of the table is on the command line: `occam fit` offers the options of laplace, map
// and vi, `occam sample` those of the samplers.
TEST(MethodOptions, TheCommandLineOffersEveryFlagOfTheTable) {
  testing::TempDir dir;
  const testing::CliRun fit = testing::occam(dir, "fit --help");
  const testing::CliRun sample = testing::occam(dir, "sample --help");
  ASSERT_EQ(fit.exit_code, 0) << fit.err;
  ASSERT_EQ(sample.exit_code, 0) << sample.err;
  const auto offers = [](const std::string& help, const char* flag) {
    return help.find(std::string(flag) + " ") != std::string::npos ||
           help.find(std::string(flag) + "\n") != std::string::npos;
  };
  for (const MethodOption& o : method_option_table()) {
    if (o.flag == nullptr) continue;
    const bool optimising = o.applies_to("laplace") || o.applies_to("map") || o.applies_to("vi");
    const bool sampling = o.applies_to("nuts") || o.applies_to("sgld") || o.applies_to("mclmc");
    if (optimising) {
      EXPECT_TRUE(offers(fit.out, o.flag)) << "occam fit has no " << o.flag;
    }
    if (sampling) {
      EXPECT_TRUE(offers(sample.out, o.flag)) << "occam sample has no " << o.flag;
    }
  }
}

// The defaults the command line shows and fits with are the table's: a flag registered with a
// default of its own (or a value passed to the library whether given or not) would differ here.
TEST(MethodOptions, TheCommandLineShowsAndFitsWithTheTablesDefaults) {
  testing::TempDir dir;
  // --help: "  --max-iterations INT:POSITIVE=5000" shows the default of the command's first method.
  const auto shown_default = [](const std::string& help, const std::string& flag) -> std::optional<std::string> {
    const std::size_t at = help.find("\n  " + flag + " ");
    if (at == std::string::npos) return std::nullopt;
    const std::string line = help.substr(at + 1, help.find('\n', at + 1) - at - 1);
    const std::size_t eq = line.find('=');
    if (eq == std::string::npos) return std::string();
    return line.substr(eq + 1, line.find(' ', eq) - eq - 1);
  };
  // No default (an option absent unless given, as --committee): none shown.
  const auto text = [](const json& v) { return v.is_string() ? v.get<std::string>() : v.is_null() ? "" : v.dump(); };
  for (const auto& [command, method] :
       {std::pair{"fit", "laplace"}, std::pair{"fit", "vi"}, std::pair{"sample", "nuts"}}) {
    const testing::CliRun help = testing::occam(dir, std::string(command) + " --help");
    ASSERT_EQ(help.exit_code, 0) << help.err;
    for (const MethodOption& o : method_option_table()) {
      if (o.flag == nullptr || o.type == MethodOptionType::kBoolean || !o.applies_to(method)) continue;
      // The command's own: fit's --threads (committee members at once), sample's 100-iteration checkpoints.
      if (std::string_view(o.flag) == "--threads" || std::string_view(o.flag) == "--checkpoint-every") continue;
      // fit shows laplace's default of an option laplace shares with vi (--batch-size, --learning-rate).
      if (std::string_view(method) == "vi" && o.applies_to("laplace")) continue;
      const std::optional<std::string> shown = shown_default(help.out, o.flag);
      ASSERT_TRUE(shown.has_value()) << command << " --help has no " << o.flag;
      EXPECT_EQ(*shown, text(o.default_value(method))) << command << " " << o.flag;
    }
  }
  // A fit without method flags runs with the table's defaults, as its report records them.
  for (const auto& [method, flags] :
       {std::pair{"laplace", ""}, std::pair{"vi", " --vi-iterations 20"}, std::pair{"map", " --alpha 1 --beta 10"}}) {
    const testing::CliRun run =
        testing::occam(dir, "fit --data " + testing::fixture("regression_train.csv") +
                                " --target y --hidden 2 --report report.json --method " + method + flags);
    ASSERT_EQ(run.exit_code, 0) << run.err;
    const json options = json::parse(testing::read_text(dir.file("report.json"))).at("options");
    const json defaults = method_to_json(default_method(method));
    for (const auto& [key, value] : defaults.items()) {
      if (key == "vi_iterations") continue;  // given
      ASSERT_TRUE(options.contains(key)) << method << ": the report has no " << key;
      EXPECT_EQ(options.at(key), value) << method << " " << key;
    }
  }
}

// A sampler's flag given with another sampler is refused by the table's "which methods", naming
// the flag and the methods it is for, before any data are read.
TEST(MethodOptions, TheCommandLineRefusesAFlagOfAnotherSampler) {
  testing::TempDir dir;
  const std::string base = "sample --data nowhere.csv --target y --out run ";
  for (const auto& [flags, message] :
       {std::pair{"--method nuts --max-steps 8", "--max-steps applies to --method mclmc and mams only"},
        std::pair{"--method hmc --max-depth 5", "--max-depth applies to --method nuts only"},
        std::pair{"--method mclmc --energy-variance 1e-3 --leapfrog-steps 4",
                  "--leapfrog-steps applies to --method hmc only"}}) {
    const testing::CliRun run = testing::occam(dir, base + flags);
    EXPECT_EQ(run.exit_code, 2) << flags << ": " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
  }
}

// So is a flag of another of occam fit's methods, which the fit used to run without
// (--hessian with --method map, --epochs with --method vi).
TEST(MethodOptions, TheCommandLineRefusesAFlagOfAnotherFitMethod) {
  testing::TempDir dir;
  const std::string base = "fit --data nowhere.csv --target y --out model.json ";
  for (const auto& [flags, message] :
       {std::pair{"--method map --hessian exact", "--hessian applies to --method laplace and vi only"},
        std::pair{"--method vi --optimizer adam --epochs 3", "--epochs applies to --method laplace and map only"},
        std::pair{"--method map --evidence-loop outer", "--evidence-loop applies to --method laplace only"}}) {
    const testing::CliRun run = testing::occam(dir, base + flags);
    EXPECT_EQ(run.exit_code, 2) << flags << ": " << run.err;
    EXPECT_NE(run.err.find(message), std::string::npos) << run.err;
  }
}

TEST(MethodOptions, BadValuesAreRefusedNamingTheOptionAsTyped) {
  const auto message = [](const json& j, OptionSpelling spelling) {
    try {
      method_from_json(j, spelling);
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), ErrorKind::kInvalidArgument);
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_EQ(message({{"method", "mclmc"}, {"max_steps", 0}}, OptionSpelling::kKey),
            "method options: max_steps = 0: must be positive");
  EXPECT_EQ(message({{"method", "mclmc"}, {"max_steps", 0}}, OptionSpelling::kFlag),
            "--max-steps = 0: must be positive");
  // Beyond the field's int: refused, not wrapped around to a negative number.
  EXPECT_EQ(message({{"method", "mclmc"}, {"max_steps", 3000000000LL}}, OptionSpelling::kFlag),
            "--max-steps = 3000000000: must be at most 2147483647");
  EXPECT_NE(message({{"method", "nuts"}, {"max_steps", 8}}, OptionSpelling::kKey)
                .find("max_steps does not apply to method 'nuts'"),
            std::string::npos);
  EXPECT_NE(
      message({{"method", "nuts"}, {"metric", "diagonal"}}, OptionSpelling::kFlag).find("--metric = \"diagonal\""),
      std::string::npos);
  EXPECT_NE(message({{"method", "sgld"}}, OptionSpelling::kKey).find("sgld needs step_size"), std::string::npos);
  EXPECT_NE(message({{"method", "sgld"}}, OptionSpelling::kFlag).find("sgld needs --step-size"), std::string::npos);
  EXPECT_NE(
      message({{"optimizer", "lbfgs"}, {"epochs", 3}}, OptionSpelling::kKey).find("epochs applies to optimizer adam"),
      std::string::npos);
  EXPECT_NE(message({{"method", "vi"}, {"hyper", "evidence"}}, OptionSpelling::kKey).find("elbo, elbo-closed, fixed"),
            std::string::npos);
  EXPECT_NE(message({{"hessian_structure", "kfac"}}, OptionSpelling::kKey).find("hessian_structure"),
            std::string::npos);
  EXPECT_NE(message({{"method", "gibbs"}}, OptionSpelling::kKey).find("must be laplace, map, vi, nuts"),
            std::string::npos);
}

}  // namespace
}  // namespace occam
