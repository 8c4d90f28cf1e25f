// The model occam fits on UCI regression: a one-hidden-layer tanh network with MacKay's four
// Gaussian prior groups (precisions a_in, a_hb, a_out, a_ob) and Gaussian noise of precision
// beta, on standardised data. The hyperparameters are data: the benchmark passes the values
// occam's ELBO chose, so both tools approximate the same posterior p(w | D, alpha, beta).
data {
  int<lower=1> N;
  int<lower=1> D;
  int<lower=1> H;
  matrix[N, D] X;
  vector[N] y;
  real<lower=0> a_in;
  real<lower=0> a_hb;
  real<lower=0> a_out;
  real<lower=0> a_ob;
  real<lower=0> beta;
}
parameters {
  matrix[D, H] W1;
  vector[H] b1;
  vector[H] W2;
  real b2;
}
model {
  to_vector(W1) ~ normal(0, inv_sqrt(a_in));
  b1 ~ normal(0, inv_sqrt(a_hb));
  W2 ~ normal(0, inv_sqrt(a_out));
  b2 ~ normal(0, inv_sqrt(a_ob));
  y ~ normal(tanh(X * W1 + rep_matrix(b1', N)) * W2 + b2, inv_sqrt(beta));
}
