#!/bin/bash -l
#PBS -N smoke
#PBS -l select=2
#PBS -l walltime=01:30:00
#PBS -l filesystems=home
#PBS -q debug
#PBS -A MyProj
#PBS -k doe
#PBS -j oe
# written by ezpz submit
set -e
cd '/home/me/my project'
export WANDB_MODE=offline
export NOTE='it'\''s $HOME'
exec /soft/ezpz/bin/ezpz launch --ppn=4 -- python3 -m app.train --lr '1e-3; rm -rf ~'
