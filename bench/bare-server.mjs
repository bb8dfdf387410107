// The send-road baseline: a bare Fastify route that parses the same JSON body and answers a reply of
// the same size as Waygate's /send/text, with nothing else (no auth, no validation, no storage).
import Fastify from 'fastify';

const app = Fastify({ logger: false });
let seq = 0;
app.post('/api/v1/send/text', async (request) => {
  const body = request.body;
  seq += 1;
  return {
    key: { remoteJid: `${body.number}@s.whatsapp.net`, fromMe: true, id: `3EB0${String(seq).padStart(20, '0')}` },
    messageTimestamp: Math.floor(Date.now() / 1000),
    status: 'SENT',
    message: { conversation: body.text },
  };
});
app.get('/api/v1/server/ok', async () => ({ status: 'ok' }));
await app.listen({ port: Number(process.env.PORT), host: '127.0.0.1' });
