// Loaded into the gateway by `npm run soak` only (`node --expose-gc --import ./scripts/soak-probe.mjs`),
// never by the gateway itself: answers the soak's questions over the child's IPC channel.
//   { probe: 'memory', id }         -> a full GC, then process.memoryUsage(): the live heap, not its garbage
//   { probe: 'snapshot', id, file } -> v8.writeHeapSnapshot(file) (blocks the gateway for seconds)
import v8 from 'node:v8';

if (process.send) {
  process.on('message', (message) => {
    if (message?.probe === 'memory') {
      globalThis.gc?.();
      process.send({ probe: 'memory', id: message.id, ...process.memoryUsage() });
    } else if (message?.probe === 'snapshot') {
      const file = v8.writeHeapSnapshot(message.file);
      process.send({ probe: 'snapshot', id: message.id, file });
    }
  });
  // The channel must not keep the gateway alive when it stops.
  process.channel?.unref();
}
