/**
 * The webhook delivery thread's entry (see `WebhookDeliveryThread`). It delivers runs: one signed
 * POST per event, in order, each answered before the next goes, stopping at the first failure.
 * Its own event loop reads each answer when it arrives; on the main loop of a gateway under load an
 * answer waited for a turn between the requests being served (~4.5 ms), which capped a lane at a
 * few hundred events/s.
 */
import { parentPort, workerData } from 'node:worker_threads';
import type { DeliveryRun, DeliveryRunOutcome, DeliveryThreadSettings } from './webhook-delivery-thread.js';
import { WebhookSink } from './webhook.js';

const settings = (workerData as { settings: DeliveryThreadSettings }).settings;
const sink = new WebhookSink({ ...settings, retry: { maxAttempts: 1, baseDelayMs: 0, maxDelayMs: 0 } });
const port = parentPort!;

async function deliver(run: DeliveryRun): Promise<DeliveryRunOutcome> {
  const seconds: number[] = [];
  for (const entry of run.entries) {
    const started = performance.now();
    const result = await sink.postSigned(run.url, run.secret, entry, run.guarded);
    seconds.push((performance.now() - started) / 1000);
    if (!result.ok) {
      return {
        id: run.id,
        delivered: seconds.length - 1,
        seconds,
        failure: { status: result.status, error: result.error ?? 'delivery failed' },
      };
    }
  }
  return { id: run.id, delivered: run.entries.length, seconds };
}

port.on('message', (message: DeliveryRun | 'close') => {
  if (message === 'close') {
    void sink.close().finally(() => port.postMessage('closed'));
    return;
  }
  void deliver(message).then((outcome) => port.postMessage(outcome));
});
port.postMessage('ready');
