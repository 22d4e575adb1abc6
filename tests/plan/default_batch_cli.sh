#!/usr/bin/env bash
# One default batch: `fabtrain schedule` and `fabtrain simulate` pick the same for a plan whose
# dp*mb does not divide 8 per GPU (dp=2,mb=3: 16 rounds up to 18), and simulate plays it.
# Usage: default_batch_cli.sh FABTRAIN
set -euo pipefail
fabtrain=$1
schedule=$("$fabtrain" schedule --model gpt2-nano --plan dp=2,mb=3 --json - |
  python3 -c "import json,sys; print(json.load(sys.stdin)['config']['global_batch'])")
simulate=$("$fabtrain" simulate --model gpt2-nano --slice utah-amst --plan dp=2,mb=3 --json - |
  python3 -c "import json,sys; print(json.load(sys.stdin)['batch'])")
echo "schedule: $schedule sequences; simulate: $simulate sequences"
[ "$schedule" = 18 ] && [ "$simulate" = 18 ]
