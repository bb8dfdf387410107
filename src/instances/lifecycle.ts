/**
 * Instance lifecycle on the network: connect, QR and pairing code, logout, reconnect and the proxy.
 * Framework-free; instances/routes.ts is its HTTP face.
 */
import { errors } from '../errors.js';
import type { SessionRegistry } from '../sessions/registry.js';
import { maskProxyPassword, type InstanceService } from '../instance-registry/service.js';

export class InstanceLifecycle {
  constructor(
    private readonly instances: InstanceService,
    private readonly sessions: SessionRegistry,
  ) {}

  /** Starts connecting (pairing when unlinked); answers the status after, with the QR when one shows. */
  async connect(instanceId: string) {
    const caller = await this.instances.get(instanceId);
    const session = this.sessions.session(caller);
    await session.connect();
    const after = await this.instances.get(caller.id);
    const qr = session.currentQr();
    return { status: after.status, ...(qr ? { qrcode: qr.qrcode } : {}) };
  }

  /** The QR offered now: 409 when connected, 404 when none is shown. */
  async currentQr(instanceId: string) {
    const caller = await this.instances.get(instanceId);
    if (caller.status === 'CONNECTED') throw errors.conflict('instance is already connected');
    const qr = this.sessions.has(caller.id) ? this.sessions.session(caller).currentQr() : undefined;
    if (!qr) throw errors.notFound('QR code (call POST /instance/connect first)');
    return {
      qrcode: qr.qrcode,
      base64: qr.qrcode.slice(qr.qrcode.indexOf(',') + 1),
      code: qr.code,
      attempt: qr.attempt,
      expiresAt: new Date(qr.expiresAt).toISOString(),
    };
  }

  async requestPairingCode(instanceId: string, number: string) {
    const caller = await this.instances.get(instanceId);
    const pairingCode = await this.sessions.session(caller).requestPairingCode(number);
    return { pairingCode, number };
  }

  async logout(instanceId: string) {
    const caller = await this.instances.get(instanceId);
    await this.sessions.session(caller).logout();
    const after = await this.instances.get(caller.id);
    return { instanceId: after.id, instanceName: after.name, status: after.status };
  }

  async reconnect(instanceId: string) {
    const target = await this.instances.get(instanceId);
    await this.sessions.session(target).reconnect();
    const after = await this.instances.get(target.id);
    return { instanceId: after.id, instanceName: after.name, status: after.status, ...(after.number ? { number: after.number } : {}) };
  }

  /** Sets or clears the proxy; a connected instance reconnects at once to apply it. */
  async setProxy(instanceId: string, proxyUrl: string | null) {
    if (proxyUrl !== null) {
      let host = '';
      try {
        host = new URL(proxyUrl).hostname;
      } catch {
        throw errors.badRequest('proxyUrl is not a valid URL');
      }
      if (!host) throw errors.badRequest('proxyUrl needs a host');
    }
    const updated = await this.instances.updateSettings(instanceId, { proxyUrl });
    if (updated.status === 'CONNECTED' && this.sessions.has(updated.id)) await this.sessions.session(updated).reconnect();
    const after = await this.instances.get(updated.id);
    return { instanceId: after.id, proxyUrl: maskProxyPassword(after.proxyUrl), status: after.status };
  }
}
