#!/usr/bin/env bash
# Grade on a Slurm cluster: N shards as a job array, then one merge job.
#   deploy/slurm/submit.sh N OUT [kc grade arguments...]
# OUT must be on a file system every node sees. KC names the kc binary (default:
# kc on PATH). Prints the two job ids; OUT/merged holds the merged run and
# OUT/merged.rc kc merge's exit code (0 conforming, 1 violations, 2 a missing
# or foreign shard) once the merge job ended.
set -euo pipefail
n=${1:?shard count}; out=${2:?output directory}; shift 2
here=$(cd "$(dirname "$0")" && pwd)
mkdir -p "$out/logs"
out=$(cd "$out" && pwd)
array=$(sbatch --parsable --array=0-$((n - 1)) -o "$out/logs/shard-%a.log" --export=ALL \
  "$here/kc-shard.sbatch" "$out" "$@")
array=${array%%;*}
merge=$(sbatch --parsable --dependency=afterany:"$array" -o "$out/logs/merge.log" --export=ALL \
  "$here/kc-merge.sbatch" "$out")
echo "shards: job $array (array 0-$((n - 1))), merge: job ${merge%%;*}"
