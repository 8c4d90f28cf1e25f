#!/usr/bin/env python3
"""The hidden units of a saved occam network that compute the same function.

    python3 bench/hidden_unit_clusters.py model.json [--tolerances 1e-6,1e-3,1e-1]

Reads the posterior mean of an `occam fit --out model.json` multilayer perceptron and groups each
hidden layer's units by their incoming weights and bias: two units whose incoming parameters agree
(up to a common sign for tanh, which is odd: v·tanh(z) = (−v)·tanh(−z)) to a
relative distance ‖z_i − z_j‖ ≤ tol·max(‖z_i‖, ‖z_j‖) compute one function, and the next layer sees
only the sum of their outgoing weights. A MAP whose units have coalesced has that many fewer
distinct units than the network has; the approach to such a point is slow (docs/evidence.md, "Where
the MAP's iterations go").

The layout is occam's Mlp (docs/library.md, `Network::dense_layers()`): layer by layer, the weights
unit-major (unit c's input j at c + j·units), then the layer's biases.
"""
import argparse
import json
import math
import sys

ODD_ACTIVATIONS = {"tanh"}  # v·tanh(z) = (−v)·tanh(−z)


def layers_of(model):
    network = model.get("network", {})
    if network.get("type") != "mlp":
        raise SystemExit(f"hidden_unit_clusters.py: the model's network is {network.get('type')!r}, not an mlp")
    sizes = network["layers"]
    w = model["posterior"]["mean"]
    out, offset = [], 0
    for fan_in, units in zip(sizes[:-1], sizes[1:]):
        weights = [[w[offset + c + j * units] for j in range(fan_in)] for c in range(units)]
        offset += fan_in * units
        biases = w[offset:offset + units]
        offset += units
        out.append((weights, biases))
    if offset != len(w):
        raise SystemExit(f"hidden_unit_clusters.py: {len(w)} parameters, but layers {sizes} with biases hold {offset}")
    return out, network.get("activation", "")


def clusters(vectors, tolerance, odd):
    """Greedy groups of vectors within the relative tolerance of each group's first member."""
    def dist(a, b, sign):
        return math.sqrt(sum((x - sign * y) ** 2 for x, y in zip(a, b)))

    norms = [math.sqrt(sum(x * x for x in v)) for v in vectors]
    group = [-1] * len(vectors)
    out = []
    for i, v in enumerate(vectors):
        if group[i] >= 0:
            continue
        group[i] = len(out)
        members = [i]
        for j in range(i + 1, len(vectors)):
            if group[j] >= 0:
                continue
            scale = tolerance * max(norms[i], norms[j])
            if dist(v, vectors[j], 1.0) <= scale or (odd and dist(v, vectors[j], -1.0) <= scale):
                group[j] = len(out)
                members.append(j)
        out.append(members)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model file from `occam fit --out`")
    parser.add_argument("--tolerances", default="1e-6,1e-3,1e-1",
                        help="relative distances at which two units count as one (comma-separated)")
    args = parser.parse_args()
    try:
        tolerances = [float(t) for t in args.tolerances.split(",")]
    except ValueError:
        sys.exit(f"hidden_unit_clusters.py: --tolerances {args.tolerances!r} is not a list of numbers")
    with open(args.model) as f:
        model = json.load(f)
    layers, activation = layers_of(model)
    odd = activation in ODD_ACTIVATIONS
    for h, (weights, biases) in enumerate(layers[:-1]):
        vectors = [row + [b] for row, b in zip(weights, biases)]
        print(f"hidden layer {h + 1}: {len(vectors)} units ({activation or 'activation not named'})")
        for tol in tolerances:
            groups = clusters(vectors, tol, odd)
            shared = sorted((g for g in groups if len(g) > 1), key=len, reverse=True)
            sizes = ", ".join(str(len(g)) for g in shared) or "none"
            print(f"    tolerance {tol:g}: {len(groups)} distinct units; groups of coinciding units: {sizes}")


if __name__ == "__main__":
    main()
