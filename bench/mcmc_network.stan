// A one-hidden-layer tanh network with Gamma priors on its four prior precisions alpha
// (input weights, hidden biases, output weights, output bias: MacKay's groups) and on the noise
// precision beta: the posterior that bench/mcmc_bench.sh samples with occam (NUTS on the weights,
// Gibbs on alpha and beta) and with Stan (NUTS on everything).
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> H;
  matrix[N, D] X;
  vector[N] y;
  int<lower=0> N_test;
  matrix[N_test, D] X_test;
  real<lower=0> a;  // Gamma shape
  real<lower=0> b;  // Gamma rate
}
parameters {
  matrix[D, H] W1;
  vector[H] b1;
  vector[H] W2;
  real b2;
  vector<lower=0>[4] alpha;
  real<lower=0> beta;
}
model {
  vector[N] f = tanh(X * W1 + rep_matrix(b1', N)) * W2 + b2;
  alpha ~ gamma(a, b);
  beta ~ gamma(a, b);
  to_vector(W1) ~ normal(0, inv_sqrt(alpha[1]));
  b1 ~ normal(0, inv_sqrt(alpha[2]));
  W2 ~ normal(0, inv_sqrt(alpha[3]));
  b2 ~ normal(0, inv_sqrt(alpha[4]));
  y ~ normal(f, inv_sqrt(beta));
}
generated quantities {
  vector[N_test] f_test = tanh(X_test * W1 + rep_matrix(b1', N_test)) * W2 + b2;
}
