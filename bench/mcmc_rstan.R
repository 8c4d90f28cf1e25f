# Stan's side of bench/mcmc_bench.sh, and the comparison of both samplers' output.
#
#   Rscript bench/mcmc_rstan.R compile OUT_DIR
#   Rscript bench/mcmc_rstan.R sample  OUT_DIR CASE CHAINS WARMUP DRAWS SEED A B
#   Rscript bench/mcmc_rstan.R compare OUT_DIR CASE
#
# CASE is a folder OUT_DIR/CASE holding train.csv (x..., y; standardised) and test_inputs.csv.
# The compiled model is cached in OUT_DIR/mcmc_network.rds (compiling takes minutes) and reused
# while bench/mcmc_network.stan is unchanged. Chains run one after another (cores = 1), as
# occam's do in the benchmark (--threads 1), so per-chain times are comparable on a busy machine.
suppressPackageStartupMessages({ library(rstan); library(posterior) })
# Debian's rstan finds Boost in /usr/include, not in the BH package.
rstan_options(boost_lib = "/usr/include")
args <- commandArgs(trailingOnly = TRUE)
mode <- args[1]; out <- args[2]
script_dir <- dirname(normalizePath(sub("--file=", "", grep("--file=", commandArgs(FALSE), value = TRUE))))
stan_file <- file.path(script_dir, "mcmc_network.stan")
rds <- file.path(out, "mcmc_network.rds")
hash_file <- file.path(out, "mcmc_network.md5")

compiled_model <- function() {
  hash <- unname(tools::md5sum(stan_file))
  if (file.exists(rds) && file.exists(hash_file) && readLines(hash_file) == hash) return(readRDS(rds))
  t <- system.time(model <- stan_model(stan_file, model_name = "mcmc_network"))
  saveRDS(model, rds)
  writeLines(hash, hash_file)
  cat(sprintf("compiled the Stan model in %.0f s\n", t[["elapsed"]]))
  model
}

if (mode == "compile") {
  invisible(compiled_model())
} else if (mode == "sample") {
  case <- args[3]; chains <- as.integer(args[4]); warmup <- as.integer(args[5]); draws <- as.integer(args[6])
  seed <- as.integer(args[7]); a <- as.numeric(args[8]); b <- as.numeric(args[9])
  dir <- file.path(out, case)
  train <- read.csv(file.path(dir, "train.csv")); test <- read.csv(file.path(dir, "test_inputs.csv"))
  X <- as.matrix(train[, setdiff(names(train), "y"), drop = FALSE])
  data <- list(N = nrow(X), D = ncol(X), H = 10L, X = X, y = train$y, N_test = nrow(test),
               X_test = as.matrix(test[, colnames(X), drop = FALSE]), a = a, b = b)
  model <- compiled_model()
  fit <- sampling(model, data = data, chains = chains, iter = warmup + draws, warmup = warmup, seed = seed,
                  cores = 1, refresh = 0)
  saveRDS(fit, file.path(dir, "stan_fit.rds"))
} else if (mode == "compare") {
  case <- args[3]
  dir <- file.path(out, case)
  # Stan: generated f_test, sampler parameters with warm-up, elapsed times.
  fit <- readRDS(file.path(dir, "stan_fit.rds"))
  f_stan <- as.array(fit, pars = "f_test")
  sp <- get_sampler_params(fit, inc_warmup = TRUE)
  warmup <- fit@sim$warmup
  stan_grad <- sum(sapply(sp, function(s) sum(s[, "n_leapfrog__"])))
  stan_div <- sum(sapply(sp, function(s) sum(s[-seq_len(warmup), "divergent__"])))
  # Stan 2.21 times its chains with clock(), i.e. in CPU seconds of its process.
  stan_chain_time <- sum(get_elapsed_time(fit))
  # occam: the chain CSV files and chains.csv (gradients and seconds per chain).
  files <- sort(Sys.glob(file.path(dir, "occam_run", "chain_*.csv")))
  occ <- lapply(files, read.csv, comment.char = "#")
  fcols <- grep("^f\\.", names(occ[[1]]), value = TRUE)
  f_occ <- array(NA_real_, dim = c(nrow(occ[[1]]), length(occ), length(fcols)))
  for (c in seq_along(occ)) f_occ[, c, ] <- as.matrix(occ[[c]][, fcols])
  occ_chains <- read.csv(file.path(dir, "occam_run", "chains.csv"))
  occ_grad <- sum(occ_chains$gradients)
  occ_chain_time <- sum(occ_chains$warmup_seconds + occ_chains$sampling_seconds)  # wall-clock seconds
  # The CPU time (user + system) of each sampler's whole process, from /usr/bin/time in
  # mcmc_bench.sh: the one measure both report alike, and steadier than wall time on a busy machine.
  cpu_seconds <- function(file) { t <- scan(file, quiet = TRUE); t[2] + t[3] }  # wall user system
  occ_time <- cpu_seconds(file.path(dir, "occam_time.txt"))
  stan_time <- cpu_seconds(file.path(dir, "stan_time.txt"))
  occ_div <- sum(sapply(occ, function(d) sum(d$divergent__)))
  summarise_f <- function(f) {
    ess <- apply(f, 3, ess_bulk); rh <- apply(f, 3, rhat)
    c(ess_median = median(ess), ess_min = min(ess), rhat_max = max(rh))
  }
  so <- summarise_f(f_occ); ss <- summarise_f(f_stan)
  # Do both samplers agree on the predictive mean? (max |difference| in units of the posterior sd)
  mo <- apply(f_occ, 3, mean); ms <- apply(f_stan, 3, mean); sdv <- apply(f_stan, 3, sd)
  res <- data.frame(
    case = case, sampler = c("occam", "stan"),
    cpu_seconds = c(occ_time, stan_time), chain_seconds = c(occ_chain_time, stan_chain_time),
    gradients = c(occ_grad, stan_grad),
    us_per_gradient = 1e6 * c(occ_time / occ_grad, stan_time / stan_grad),
    ess_bulk_median = c(so[["ess_median"]], ss[["ess_median"]]), ess_bulk_min = c(so[["ess_min"]], ss[["ess_min"]]),
    ess_per_second = c(so[["ess_median"]] / occ_time, ss[["ess_median"]] / stan_time),
    rhat_max = c(so[["rhat_max"]], ss[["rhat_max"]]), divergences = c(occ_div, stan_div),
    max_mean_difference_in_sd = max(abs(mo - ms) / sdv))
  write.csv(res, file.path(dir, "comparison.csv"), row.names = FALSE)
  print(res, digits = 4)
  # The hyperparameters: R-hat and bulk ESS of each alpha_g and of beta, for both samplers.
  hyper_occ <- array(NA_real_, dim = c(nrow(occ[[1]]), length(occ), 5))
  hcols <- c(paste0("alpha.", 1:4), "beta")
  for (c in seq_along(occ)) hyper_occ[, c, ] <- as.matrix(occ[[c]][, hcols])
  hyper_stan <- as.array(fit, pars = c("alpha", "beta"))
  hyper <- data.frame(case = case, parameter = hcols,
                      occam_rhat = apply(hyper_occ, 3, rhat), occam_ess_bulk = apply(hyper_occ, 3, ess_bulk),
                      stan_rhat = apply(hyper_stan, 3, rhat), stan_ess_bulk = apply(hyper_stan, 3, ess_bulk),
                      row.names = NULL)
  write.csv(hyper, file.path(dir, "hyperparameters.csv"), row.names = FALSE)
  print(hyper, digits = 4)
}
