/** The sandbox network driver: the reference implementation of the port. */
import type { NetworkDriver, SessionHost } from '../port.js';
import type { SandboxNetwork } from './network.js';
import { SandboxSession, type SandboxTiming } from './session.js';

export class SandboxDriver implements NetworkDriver {
  readonly network = 'sandbox' as const;

  constructor(
    readonly world: SandboxNetwork,
    private readonly timing: SandboxTiming,
  ) {}

  open(host: SessionHost): SandboxSession {
    return new SandboxSession(host, this.world, this.timing);
  }

  stop(): Promise<void> {
    return Promise.resolve();
  }
}
