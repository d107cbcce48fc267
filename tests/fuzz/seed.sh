#!/bin/sh
# seed.sh - writes the seed corpora of the fuzz targets from files the
# repository already keeps (nothing is copied into tests/fuzz/):
#
#   seed.sh SOURCE_DIR OUT_DIR
#
# makes OUT_DIR/<target>/ afresh for each target of tests/fuzz/CMakeLists.txt:
#   fuzz_proto   proto/golden/*.json, tests/fixtures/proto/*
#   fuzz_mpatch  pairs "TARGET\0PATCH" of consecutive golden files (and the
#                snapshot with the patch report)
#   fuzz_kpatch  pairs of golden Node snapshots, and the snapshot with the
#                delta report
#   fuzz_mpatch_large  two pairs of objects of 5 000 and 12 000 members that
#                a quadratic merge or diff could not finish within the CTest
#                run's -timeout
#   fuzz_obj     proto/golden/objects/*.json, proto/golden/desired-*.json,
#                and arrays [policy, report] of the golden EgressPolicy and
#                a report of its actual state
#   fuzz_yaml    packaging/examples/*.yaml, proto/golden/objects/*.json
#   fuzz_config  tests/fixtures/config/*, packaging/etc/*.conf
#   fuzz_report  proto/golden/report-*.json, and sequences "MSG\0MSG..." of
#                hello, snapshot, patch and event
set -eu

src=$1
out=$2
golden=$src/proto/golden

fresh() {
    rm -rf "$out/$1"
    mkdir -p "$out/$1"
}

# pair A B DEST: writes A, a NUL byte and B to DEST.
pair() {
    { cat "$1"; printf '\000'; cat "$2"; } >"$3"
}

fresh fuzz_proto
cp "$golden"/*.json "$src"/tests/fixtures/proto/* "$out/fuzz_proto/"

fresh fuzz_mpatch
prev=
i=0
for f in "$golden"/*.json "$golden"/objects/*.json; do
    if [ -n "$prev" ]; then
        pair "$prev" "$f" "$out/fuzz_mpatch/pair-$i"
        i=$((i + 1))
    fi
    prev=$f
done
pair "$golden/report-snapshot.json" "$golden/report-patch.json" \
    "$out/fuzz_mpatch/snapshot-patch"
fresh fuzz_kpatch
pair "$golden/report-snapshot.json" "$golden/report-delta.json" \
    "$out/fuzz_kpatch/snapshot-delta"
pair "$golden/report-snapshot.json" "$golden/report-snapshot-nftables.json" \
    "$out/fuzz_kpatch/snapshot-snapshot"
pair "$golden/report-snapshot-nftables.json" "$golden/report-snapshot.json" \
    "$out/fuzz_kpatch/snapshot-snapshot-back"
# Large inputs, for -timeout, kept apart (fuzz_mpatch_large runs each once:
# mutating them would slow the fuzzing a hundredfold): a flat pair (merge
# and diff look members up in the other object) and a pair whose member
# object is equal on both sides (diff compares it with the one it replaces).
fresh fuzz_mpatch_large
awk 'BEGIN {
    n = 5000
    printf "{"
    for (i = 0; i < n; i++) printf "%s\"k%d\":%d", (i ? "," : ""), i, i
    printf "}%c{", 0
    for (i = 0; i < n; i++) printf "%s\"k%d\":%s", (i ? "," : ""), n - 1 - i, (i % 3 ? "1" : "null")
    printf "}"
}' >"$out/fuzz_mpatch_large/large-flat"
awk 'BEGIN {
    n = 12000
    printf "{\"o\":{"
    for (i = 0; i < n; i++) printf "%s\"k%d\":%d", (i ? "," : ""), i, i
    printf "},\"p\":1}%c{\"p\":2}", 0
}' >"$out/fuzz_mpatch_large/large-nested"

fresh fuzz_obj
cp "$golden"/objects/*.json "$golden"/desired-*.json "$out/fuzz_obj/"
for r in report-snapshot report-snapshot-nftables; do
    { printf '['; cat "$golden/objects/egresspolicy.json"; printf ','
      cat "$golden/$r.json"; printf ']'; } >"$out/fuzz_obj/egresspolicy-$r"
done

fresh fuzz_yaml
cp "$src"/packaging/examples/*.yaml "$golden"/objects/*.json "$out/fuzz_yaml/"

fresh fuzz_config
cp "$src"/tests/fixtures/config/* "$src"/packaging/etc/*.conf "$out/fuzz_config/"

fresh fuzz_report
cp "$golden"/report-*.json "$out/fuzz_report/"
{
    cat "$golden/hello-basic.json"; printf '\000'
    cat "$golden/report-snapshot.json"; printf '\000'
    cat "$golden/report-patch.json"; printf '\000'
    cat "$golden/report-event.json"
} >"$out/fuzz_report/hello-snapshot-patch-event"
pair "$golden/report-snapshot.json" "$golden/report-patch.json" \
    "$out/fuzz_report/snapshot-patch"
