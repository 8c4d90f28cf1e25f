#!/usr/bin/env python3
"""The hidden units of a saved occam network that compute the same function.

    python3 bench/hidden_unit_clusters.py model.json [--tolerances 1e-6,1e-3,1e-1] [--data train.csv]

Reads the posterior mean of an `occam fit --out model.json` multilayer perceptron and groups each
hidden layer's units by their incoming weights and bias: two units whose incoming parameters agree
(up to a common sign for tanh, which is odd: v·tanh(z) = (−v)·tanh(−z)) to a
relative distance ‖z_i − z_j‖ ≤ tol·max(‖z_i‖, ‖z_j‖) compute one function, and the next layer sees
only the sum of their outgoing weights. A MAP whose units have coalesced has that many fewer
distinct units than the network has; the approach to such a point is slow (docs/evidence.md, "What the
valley is: hidden units coalescing").

With --data (the training rows, a CSV with the model's feature columns), each group of the first
hidden layer at the smallest tolerance is described over those rows: its pre-activations' mean and
standard deviation after the model's standardisation, and the smallest slope tanh'(a) = 1 − tanh²(a)
— a group whose slope stays near 1 works in tanh's linear range.

The layout is occam's Mlp (docs/library.md, `Network::dense_layers()`): layer by layer, the weights
unit-major (unit c's input j at c + j·units), then the layer's biases.
"""
import argparse
import csv
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


def standardised_rows(model, path):
    """The rows of a CSV's feature columns as the model's standardiser maps them."""
    features = model["features"]
    scaler = model.get("standardizer", {})
    mean = scaler.get("x_mean") or [0.0] * len(features)
    scale = [s if s > 0 else 1.0 for s in (scaler.get("x_scale") or [1.0] * len(features))]
    with open(path, newline="") as f:
        reader = csv.reader(f)
        header = next(reader)
        missing = [name for name in features if name not in header]
        if missing:
            raise SystemExit(f"hidden_unit_clusters.py: {path} has no column {missing[0]!r} of the model's features")
        columns = [header.index(name) for name in features]
        return [[(float(row[c]) - mu) / sd for c, mu, sd in zip(columns, mean, scale)] for row in reader if row]


def describe_groups(groups, weights, biases, outgoing, rows, activation):
    for members in groups:
        c = members[0]
        a = [sum(w * x for w, x in zip(weights[c], row)) + biases[c] for row in rows]
        mean = sum(a) / len(a)
        sd = math.sqrt(sum((x - mean) ** 2 for x in a) / len(a))
        norm = math.sqrt(sum(w * w for w in weights[c]) + biases[c] ** 2)
        line = (f"    {len(members)} units: incoming norm {norm:.3g}, outgoing |v| {abs(outgoing[c]):.3g}; "
                f"pre-activation mean {mean:.3g}, s.d. {sd:.3g}")
        if activation == "tanh":
            line += f"; smallest tanh' {min(1.0 - math.tanh(x) ** 2 for x in a):.3g}"
        print(line)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="a model file from `occam fit --out`")
    parser.add_argument("--tolerances", default="1e-6,1e-3,1e-1",
                        help="relative distances at which two units count as one (comma-separated)")
    parser.add_argument("--data", help="the training rows (CSV): describe the first layer's groups over them")
    args = parser.parse_args()
    try:
        tolerances = [float(t) for t in args.tolerances.split(",")]
    except ValueError:
        sys.exit(f"hidden_unit_clusters.py: --tolerances {args.tolerances!r} is not a list of numbers")
    with open(args.model) as f:
        model = json.load(f)
    layers, activation = layers_of(model)
    odd = activation in ODD_ACTIVATIONS
    rows = standardised_rows(model, args.data) if args.data else None
    for h, (weights, biases) in enumerate(layers[:-1]):
        vectors = [row + [b] for row, b in zip(weights, biases)]
        print(f"hidden layer {h + 1}: {len(vectors)} units ({activation or 'activation not named'})")
        for tol in tolerances:
            groups = clusters(vectors, tol, odd)
            shared = sorted((g for g in groups if len(g) > 1), key=len, reverse=True)
            sizes = ", ".join(str(len(g)) for g in shared) or "none"
            print(f"    tolerance {tol:g}: {len(groups)} distinct units; groups of coinciding units: {sizes}")
        if rows is not None and h == 0:
            shared = sorted((g for g in clusters(vectors, min(tolerances), odd) if len(g) > 1), key=len, reverse=True)
            outgoing = layers[1][0][0]  # each unit's weight into the next layer's first unit
            print(f"  over the {len(rows)} rows of {args.data}, the groups at tolerance {min(tolerances):g}:")
            describe_groups(shared, weights, biases, outgoing, rows, activation)


if __name__ == "__main__":
    main()
