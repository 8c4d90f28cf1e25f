# Makes the fixtures of tests/inference/mcmc/mcmc_diagnostics_test.cc: fixed draws and the diagnostics R's
# posterior package (1.4.0) computes from them. Run from tests/data:
#   Rscript make_mcmc_diagnostics_fixture.R
library(posterior)
set.seed(20261121)
ar1 <- function(n, phi, mu) { x <- numeric(n); x[1] <- rnorm(1); for (t in 2:n) x[t] <- phi * x[t - 1] + rnorm(1); x + mu }
n <- 201  # odd: split_chains drops the middle draw
variables <- list(
  mixing = sapply(1:4, function(c) ar1(n, 0.7, 0)),
  shifted = sapply(1:4, function(c) ar1(n, 0.5, c(0, 0, 0, 1.5)[c])),
  heavy = sapply(1:4, function(c) rt(n, df = 2)),
  trend = sapply(1:4, function(c) ar1(n, 0.9, 0) + seq(0, 2, length.out = n))
)
draws <- do.call(cbind, lapply(names(variables), function(v) { m <- variables[[v]]; colnames(m) <- paste0(v, ".", 1:4); m }))
write.csv(format(as.data.frame(draws), digits = 17), "mcmc_draws.csv", row.names = FALSE, quote = FALSE)
x <- read.csv("mcmc_draws.csv")  # the values exactly as the test reads them
expected <- t(sapply(names(variables), function(v) {
  m <- as.matrix(x[, paste0(v, ".", 1:4)])
  c(rhat = rhat(m), rhat_basic = rhat_basic(m), ess_bulk = ess_bulk(m), ess_tail = ess_tail(m),
    ess_mean = ess_mean(m), mcse_mean = mcse_mean(m))
}))
write.csv(format(as.data.frame(expected), digits = 17), "mcmc_diagnostics_expected.csv", quote = FALSE)
