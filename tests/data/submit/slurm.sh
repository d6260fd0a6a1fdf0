#!/bin/bash -l
#SBATCH --job-name=smoke
#SBATCH --nodes=2
#SBATCH --time=01:30:00
#SBATCH --partition=debug
#SBATCH --account=MyProj
# written by ezpz submit
set -e
cd '/home/me/my project'
export WANDB_MODE=offline
export NOTE='it'\''s $HOME'
exec /soft/ezpz/bin/ezpz launch --ppn=4 -- python3 -m app.train --lr '1e-3; rm -rf ~'
