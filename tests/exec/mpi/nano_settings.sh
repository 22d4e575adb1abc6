# The training settings the equivalence tests share (sourced; $src: the source folder): gpt2-nano,
# 20 steps of a fixed seed, one thread a rank, so a run of a plan can be compared with another.
args=(--model gpt2-nano --data "$src/data/tiny_prose_train.txt" --batch 8 --seq 32 --steps 20
      --lr 3e-3 --warmup 2 --seed 42 --threads 1 --timeout-s 60 --print-every 20)
