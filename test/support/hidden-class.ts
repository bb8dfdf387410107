/**
 * Whether objects made the same way share one V8 hidden class ("map"). On Node 20 an object literal
 * that starts with a spread and then adds a field (`{ ...sent, instanceId }`) gets a new hidden class
 * on every call after the first few: ~0.5 µs and a garbage map each. Hot paths are checked with this.
 */
import v8 from 'node:v8';

v8.setFlagsFromString('--allow-natives-syntax');
// eslint-disable-next-line @typescript-eslint/no-implied-eval -- V8's intrinsic is reachable only from code parsed after the flag
const haveSameMap = new Function('a', 'b', 'return %HaveSameMap(a, b)') as (a: object, b: object) => boolean;

/** How many times the hidden class changed between consecutive objects of `make`, after a warm-up. */
export function hiddenClassChanges(make: (i: number) => object, calls = 100): number {
  const WARM_UP = 20;
  let previous: object | undefined;
  let changes = 0;
  for (let i = 0; i < WARM_UP + calls; i++) {
    const made = make(i);
    if (i > WARM_UP && previous && !haveSameMap(previous, made)) changes += 1;
    previous = made;
  }
  return changes;
}
