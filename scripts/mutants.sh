#!/usr/bin/env bash
# Shows that the fault simulation's checks bite: breaks the queue core on purpose, one mutant at a
# time (buildqueue.faults.Mutants lists them), runs FaultInjectionTest's default scenarios against
# each in a copy of this working tree (functions/core/target/mutants/), and prints which invariant
# caught each mutant, with the seed, the scenarios it took and the time. Exits non-zero if one
# went uncaught. Not part of `mvn verify`: it runs the default suite once per mutant.
#
#   scripts/mutants.sh [-o] [--base-seed=B] [--only=name,name] [--source=DIR]
#
# -o: Maven offline. --base-seed: the same batch of scenarios for every mutant (default: fresh,
# printed). --only: some of the mutants. --source: mutate another checkout's core and simulation.
set -euo pipefail
cd "$(dirname "$0")/.."
offline=()
for a in "$@"; do
  if [ "$a" = "-o" ]; then offline=(-o); fi
done
mvn -B -ntp -q "${offline[@]}" -pl functions/core -am test-compile
exec java -cp functions/core/target/test-classes buildqueue.faults.Mutants "$@"
