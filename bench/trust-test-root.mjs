// Bench only, loaded with `node --import` before a gateway process: its Baileys trusts the Noise
// root of a fake WhatsApp server running in another process (BENCH_TRUST_ROOT, base64), as a test
// installs a test CA. Never part of the gateway itself.
import { WA_CERT_DETAILS } from 'baileys';

const root = process.env.BENCH_TRUST_ROOT;
if (!root) throw new Error('BENCH_TRUST_ROOT is not set');
WA_CERT_DETAILS.PUBLIC_KEY = Buffer.from(root, 'base64');
