/**
 * protobufjs' `util.oneOfGetter`, holding a oneof's field names in a Set instead of an object literal.
 *
 * Why: V8 keeps at most 1,536 transitions on the map of the empty object literal, one per distinct
 * first property name added to a `{}`, for as long as an object of that shape lives. protobufjs builds
 * each oneof's field set as `{}` plus one property per field and keeps it in the getter's closure, so
 * loading Baileys' WAProto (2,227 oneofs) takes ~1,400 of them for the life of the process, and the
 * gateway's own modules take the rest. From then on every object built as `{}` plus properties,
 * `{ ...x }`, `Object.assign({}, ...)` or `Object.fromEntries` whose first key V8 had not met by then
 * gets a map made for it alone, each time: a node-postgres row (built as `{ ...template }`) cost
 * ~6 KB of garbage instead of ~0.4 KB, and no property read that meets such objects stays fast.
 *
 * Installed when this module is evaluated, which must be before anything loads Baileys: src/main.ts
 * imports it first. `oneof-getter.test.ts` checks the gateway process and the premise.
 */
import protobuf from 'protobufjs/minimal.js';

type OneOfGetter = (fieldNames: string[]) => (this: object) => string | undefined;
const util = protobuf.util as unknown as { oneOfGetter: OneOfGetter };

/** protobufjs' own getter, kept so the tests can check that ours answers the same. */
export const protobufOneOfGetter: OneOfGetter = util.oneOfGetter;

/** A getter of the oneof's set field name: the last of `fieldNames` set on the message, as protobufjs answers. */
export function oneOfGetter(fieldNames: string[]): (this: object) => string | undefined {
  const fields = new Set(fieldNames);
  return function setFieldName(this: object) {
    const message = this as Record<string, unknown>;
    const keys = Object.keys(message);
    for (let i = keys.length - 1; i >= 0; i -= 1) {
      const key = keys[i]!;
      if (fields.has(key) && message[key] !== undefined && message[key] !== null) return key;
    }
    return undefined;
  };
}

util.oneOfGetter = oneOfGetter;
