/** Sending: validated canonical messages go through the instance's session on the port. */
import type { Instance } from '../instances/service.js';
import type { OutgoingMessage, SentMessage } from '../network/port.js';
import type { SessionRegistry } from '../network/sessions.js';

export class MessagingService {
  constructor(private readonly sessions: SessionRegistry) {}

  /** 409 `instance_not_connected` unless the instance is connected; the SEND_MESSAGE event follows. */
  async send(instance: Instance, message: OutgoingMessage): Promise<SentMessage> {
    const session = await this.sessions.connected(instance);
    return session.send(message);
  }
}
