// Bench only, loaded with `node --import` before a gateway process: its Baileys trusts the Noise
// root of a fake WhatsApp server running in another process (BENCH_TRUST_ROOT, base64), as a test
// installs a test CA. Never part of the gateway itself.
//
// It loads Baileys before the gateway's entry does, so it installs the gateway's oneof getter first,
// as src/main.ts does: without it WAProto keeps protobufjs' getter and V8's transitions of the empty
// object's map are full for the life of the process (see src/network/whatsapp/oneof-getter.ts), and
// the measured gateway is not the one `npm start` runs (its PostgreSQL reads ran at half speed).
import '../dist/network/whatsapp/oneof-getter.js';
import { WA_CERT_DETAILS, proto } from 'baileys';

const getter = Object.getOwnPropertyDescriptor(proto.EmbeddedContent.prototype, 'content')?.get;
if (getter?.name !== 'setFieldName') throw new Error("Baileys' WAProto was loaded before the gateway's oneof getter");

const root = process.env.BENCH_TRUST_ROOT;
if (!root) throw new Error('BENCH_TRUST_ROOT is not set');
WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(root, 'base64');
