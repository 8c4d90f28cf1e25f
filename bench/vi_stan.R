# Stan's ADVI (rstan::vb) on the model of bench/vi_bnn.stan: one run, one JSON line on stdout.
#   Rscript bench/vi_stan.R TRAIN.csv TEST.csv CACHE_DIR meanfield|fullrank SEED H A_IN A_HB A_OUT A_OB BETA
# The hyperparameters are the ones occam chose (standardised units); the data are
# standardised as occam does (training mean and population sd). The predictive is Monte Carlo
# over ADVI's 1000 draws, y ~ N(f, 1/beta), summarised by its mean and sd, in y's units.
suppressMessages(library(rstan))
rstan_options(boost_lib = "/usr/include")
args <- commandArgs(trailingOnly = TRUE)
train <- as.matrix(read.csv(args[1])); test <- as.matrix(read.csv(args[2]))
cache <- args[3]; algorithm <- args[4]; seed <- as.integer(args[5]); h <- as.numeric(args[6:11])
D <- ncol(train) - 1
psd <- function(x) sqrt(mean((x - mean(x))^2))
xm <- colMeans(train[, 1:D]); xs <- apply(train[, 1:D], 2, psd); xs[xs == 0] <- 1
ym <- mean(train[, D + 1]); ys <- psd(train[, D + 1])
X <- sweep(sweep(train[, 1:D], 2, xm), 2, xs, "/"); y <- (train[, D + 1] - ym) / ys
Xt <- sweep(sweep(test[, 1:D], 2, xm), 2, xs, "/"); yt <- test[, D + 1]
data <- list(N = nrow(X), D = D, H = as.integer(h[1]), X = X, y = y,
             a_in = h[2], a_hb = h[3], a_out = h[4], a_ob = h[5], beta = h[6])
model <- readRDS(file.path(cache, "vi_bnn.rds"))
# Stan writes its iteration table to the console: divert both streams to a file and read it back.
log_file <- tempfile(fileext = ".log")
sink_con <- file(log_file, open = "wt")
sink(sink_con); sink(sink_con, type = "message")
fit <- NULL
seconds <- system.time(fit <- tryCatch(
  vb(model, data = data, algorithm = algorithm, seed = seed, iter = 10000, output_samples = 1000, refresh = 100),
  error = function(e) { message("ERROR: ", conditionMessage(e)); NULL }))[["elapsed"]]
sink(type = "message"); sink(); close(sink_con)
log <- sub("^Chain [0-9]+: ", "", readLines(log_file))
if (is.null(fit)) {
  why <- gsub('"', "'", sub("^ERROR: ", "", grep("^ERROR: ", log, value = TRUE)[1]))
  cat(sprintf('{"tool": "stan-advi-%s", "seconds": %.4f, "failed": "%s"}\n', algorithm, seconds, why))
  quit(status = 0)
}
# The last iteration in Stan's ELBO table (printed every 100 iterations).
iters <- suppressWarnings(as.integer(sub("^ *([0-9]+) .*", "\\1", grep("^ +[0-9]+ +-?[0-9.e+]+ ", log, value = TRUE))))
iterations <- if (length(iters) > 0) max(iters, na.rm = TRUE) else NA
converged <- any(grepl("ELBO CONVERGED", log))  # Stan's notes column: MEAN or MEDIAN ELBO CONVERGED
draws <- extract(fit)
S <- dim(draws$W1)[1]
f <- sapply(seq_len(S), function(s) {
  h <- tanh(Xt %*% draws$W1[s, , ] + matrix(draws$b1[s, ], nrow(Xt), data$H, byrow = TRUE))
  as.vector(h %*% draws$W2[s, ] + draws$b2[s])
})
mu <- ym + ys * rowMeans(f)
sd <- ys * sqrt(apply(f, 1, var) + 1 / data$beta)
rmse <- sqrt(mean((yt - mu)^2))
ll <- mean(-0.5 * log(2 * pi * sd^2) - (yt - mu)^2 / (2 * sd^2))
cat(sprintf('{"tool": "stan-advi-%s", "seconds": %.4f, "iterations": %s, "converged": %s, "test_rmse": %.6f, "test_ll": %.6f}\n',
            algorithm, seconds, ifelse(is.na(iterations), "null", iterations), ifelse(converged, "true", "false"), rmse, ll))
