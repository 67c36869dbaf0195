#!/usr/bin/env bash
# Install what tests/slurm_cluster.py needs for the real single-node SLURM test:
# slurm-wlm (slurmctld, slurmd, sbatch, squeue, srun, sinfo) and munge.
# CI runs as root on a fresh Debian 12 machine; on a second call this is a no-op.
# The test fixture configures and starts the daemons itself (in a temp dir), so nothing is
# enabled or started here. Export URD_REQUIRE_SLURM=1 afterwards so that a cluster that
# cannot start fails the tests instead of skipping them.
set -euo pipefail

need=()
for bin in slurmctld slurmd munged mungekey sbatch squeue srun sinfo scontrol; do
    command -v "$bin" >/dev/null 2>&1 || [ -x "/usr/sbin/$bin" ] || need+=("$bin")
done
if [ ${#need[@]} -eq 0 ]; then
    echo "slurm.sh: slurm-wlm and munge already installed"
    exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
    echo "slurm.sh: missing ${need[*]}; installing needs root (apt-get install slurm-wlm munge)" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends slurm-wlm munge >/dev/null
echo "slurm.sh: installed $(dpkg-query -W -f='${Package} ${Version}, ' slurm-wlm munge | sed 's/, $//')"
