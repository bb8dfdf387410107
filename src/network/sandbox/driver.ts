/** The sandbox network driver: the reference implementation of the port. */
import type { NetworkDriver, SessionHost } from '../port.js';
import { equipSession } from './capabilities.js';
import type { SandboxNetwork } from './network.js';
import { SandboxSession, type SandboxTiming } from './session.js';
import type { SandboxWorld } from './world.js';

export class SandboxDriver implements NetworkDriver {
  readonly network = 'sandbox' as const;

  constructor(
    readonly world: SandboxNetwork,
    private readonly timing: SandboxTiming,
    /** Groups, chats, profiles, ... of the simulated network; it observes what every session emits. */
    readonly social: SandboxWorld,
  ) {}

  open(host: SessionHost): SandboxSession {
    return equipSession(new SandboxSession(this.social.observe(host), this.world, this.timing), this.social);
  }

  forget(instanceId: string): Promise<void> {
    this.social.forgetInstance(instanceId);
    return Promise.resolve();
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }
}
