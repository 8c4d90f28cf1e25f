# Makes the PSIS-LOO fixture that tests/inference/mcmc/loo_test.cc checks occam::mcmc::psis_loo against:
#
#   Rscript tests/data/loo/make_fixture.R tests/data/loo
#
# Draws: a normal model y_i ~ N(mu, sigma) of 20 observations, one of them an outlier, with
# 4 chains x 250 autocorrelated draws (AR(1) around a fixed posterior) so that the relative
# efficiencies are below 1 and the outlier's Pareto k is high. The log-likelihood matrix is
# written with 10 significant digits and read back before R's loo package (Debian r-cran-loo)
# computes from it, so both sides start from the same doubles. Outputs:
#   log_lik.csv       chain, draw, log_lik.1 ... log_lik.20 (CmdStan's column names)
#   expected_reff.csv loo(ll, r_eff = relative_eff(exp(ll), chain_id)) pointwise + estimates
#   expected_noreff.csv loo(ll) (r_eff = 1) pointwise + estimates
suppressMessages(library(loo))
args <- commandArgs(trailingOnly = TRUE)
out <- if (length(args) > 0) args[1] else "."
set.seed(20261123)
n <- 20
y <- c(rnorm(n - 1, 1, 1), 6.5)
chains <- 4; iterations <- 250
ar1 <- function(len, phi) { z <- numeric(len); z[1] <- rnorm(1)
  for (t in 2:len) z[t] <- phi * z[t - 1] + sqrt(1 - phi^2) * rnorm(1); z }
mu <- c(); log_sigma <- c(); chain <- c(); draw <- c()
for (c in 1:chains) {
  mu <- c(mu, mean(y) + 0.35 * ar1(iterations, 0.8))
  log_sigma <- c(log_sigma, log(sd(y)) + 0.17 * ar1(iterations, 0.6))
  chain <- c(chain, rep(c, iterations)); draw <- c(draw, 1:iterations)
}
ll <- sapply(y, function(yi) dnorm(yi, mu, exp(log_sigma), log = TRUE))
colnames(ll) <- paste0("log_lik.", 1:n)
table <- data.frame(chain = chain, draw = draw, ll, check.names = FALSE)
for (col in colnames(ll)) table[[col]] <- as.character(signif(table[[col]], 10))
write.csv(table, file.path(out, "log_lik.csv"), row.names = FALSE, quote = FALSE)

back <- read.csv(file.path(out, "log_lik.csv"), check.names = FALSE)
ll <- as.matrix(back[, -(1:2)])
chain_id <- back$chain
write_result <- function(x, file) {
  p <- x$pointwise
  rows <- data.frame(what = paste0("pointwise.", seq_len(nrow(p))), elpd_loo = p[, "elpd_loo"],
                     mcse_elpd_loo = p[, "mcse_elpd_loo"], p_loo = p[, "p_loo"], looic = p[, "looic"],
                     pareto_k = p[, "influence_pareto_k"], n_eff = x$diagnostics$n_eff)
  est <- x$estimates
  totals <- data.frame(what = c("estimate", "se"), elpd_loo = est["elpd_loo", ], mcse_elpd_loo = NA,
                       p_loo = est["p_loo", ], looic = est["looic", ], pareto_k = NA, n_eff = NA)
  all <- rbind(rows, totals)
  for (col in names(all)[-1]) all[[col]] <- sprintf("%.17g", all[[col]])
  write.csv(all, file, row.names = FALSE, quote = FALSE)
}
r_eff <- relative_eff(exp(ll), chain_id = chain_id)
write_result(loo(ll, r_eff = r_eff), file.path(out, "expected_reff.csv"))
write_result(suppressWarnings(loo(ll)), file.path(out, "expected_noreff.csv"))
writeLines(sprintf("%.17g", r_eff), file.path(out, "expected_r_eff.txt"))
