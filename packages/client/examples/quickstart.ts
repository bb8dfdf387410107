import http from 'node:http';
import { readFile } from 'node:fs/promises';
import { WaygateClient, WaygateError, parseWebhook, WebhookSignatureError, type WaygateEvent } from '@waygate/client';

const baseUrl = process.env.WAYGATE_URL ?? 'http://localhost:8080';
const admin = new WaygateClient({ baseUrl, apiKey: process.env.WAYGATE_KEY });

// Admin key: create an instance; the token and webhook secret are shown once.
const created = await admin.request('POST /instance/create', {
  instanceName: 'shop',
  network: 'sandbox',
  webhookUrl: 'https://hooks.example.com/waygate',
});
const shop = new WaygateClient({ baseUrl, apiKey: created.token });

// Instance token: send a text, then a file as a multipart upload.
try {
  const sent = await shop.request('POST /send/text', { number: '5511999990000', text: 'Hello from Waygate' });
  console.log('sent', sent.key.id);
  await shop.request('POST /send/media', {
    number: '5511999990000',
    caption: 'The menu',
    media: { file: await readFile('menu.pdf'), filename: 'menu.pdf' },
  });
} catch (error) {
  if (error instanceof WaygateError) console.error(error.status, error.code, error.message);
  else throw error;
}

// Events over the WebSocket, typed by `event`; the stream reconnects after a drop.
const stream = shop.events({ instanceId: created.instanceId, types: ['MESSAGE', 'CONNECTION'] });
stream.on('event', (event: WaygateEvent) => {
  if (event.event === 'MESSAGE') console.log(event.data.key.remoteJid, event.data.message.conversation);
  else if (event.event === 'CONNECTION') console.log('status', event.data.status);
});
stream.on('reconnecting', ({ attempt, delayMs }) => console.log(`reconnecting (#${attempt}) in ${delayMs} ms`));

// A webhook receiver: check the signature on the raw body, answer 401 on a mismatch.
const secret = created.webhookSecret;
http
  .createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      try {
        const event = parseWebhook(Buffer.concat(chunks), request.headers, secret);
        response.writeHead(200).end();
        console.log('webhook', event.event, event.eventId);
      } catch (error) {
        response.writeHead(error instanceof WebhookSignatureError ? 401 : 400).end();
      }
    });
  })
  .listen(3000);
