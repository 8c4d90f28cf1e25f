# Compiles bench/vi_bnn.stan once into $OCCAM_STAN_CACHE (default bench/.stan-cache); later runs
# reuse the compiled model (compilation takes minutes on a busy machine).
suppressMessages(library(rstan))
# Debian ships Boost in /usr/include rather than the BH package rstan looks for.
rstan_options(boost_lib = "/usr/include")
args <- commandArgs(trailingOnly = TRUE)
cache <- if (length(args) > 0) args[1] else "bench/.stan-cache"
dir.create(cache, showWarnings = FALSE, recursive = TRUE)
rds <- file.path(cache, "vi_bnn.rds")
if (!file.exists(rds)) {
  m <- stan_model(file = "bench/vi_bnn.stan", model_name = "vi_bnn")
  saveRDS(m, rds)
}
cat("compiled model in", rds, "\n")
