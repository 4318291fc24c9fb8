#!/bin/sh
# Regenerates the sample traces from sample_source.json (run from the repository root after a build).
set -e
B=${SERVESIM:-build/servesim}
D=scenarios/traces
$B gen-trace $D/sample_source.json --format azure --out $D/sample_azure.csv
$B gen-trace $D/sample_source.json --format burstgpt --out $D/sample_burstgpt.csv
$B gen-trace $D/sample_source.json --format jsonl --out $D/sample_requests.jsonl
$B gen-trace $D/sample_source.json --format splitwise --out $D/sample_splitwise.csv
