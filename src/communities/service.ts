/** Communities: the /community routes' logic over the session's community capability. */
import type { Instance } from '../instance-registry/service.js';
import { capabilityOf } from '../sessions/capability.js';
import type { CommunityOperations, PageRequest } from '../network/port.js';
import type { SessionRegistry } from '../sessions/registry.js';

export class CommunityService {
  constructor(private readonly sessions: SessionRegistry) {}

  private communities(instance: Instance): Promise<CommunityOperations> {
    return capabilityOf(this.sessions, instance, 'communities');
  }

  async create(instance: Instance, subject: string, description: string | undefined) {
    return (await this.communities(instance)).create(subject, description);
  }

  async info(instance: Instance, communityId: string) {
    return (await this.communities(instance)).info(communityId);
  }

  async list(instance: Instance, page: PageRequest) {
    const { items, total } = await (await this.communities(instance)).list(page);
    return { items, total, ...page };
  }

  async link(instance: Instance, communityId: string, groupIds: string[], linked: boolean) {
    const communities = await this.communities(instance);
    return linked ? communities.link(communityId, groupIds) : communities.unlink(communityId, groupIds);
  }

  async groups(instance: Instance, communityId: string, page: PageRequest) {
    const { items, total } = await (await this.communities(instance)).groups(communityId, page);
    return { items, total, ...page };
  }

  async announce(instance: Instance, communityId: string, text: string) {
    return (await this.communities(instance)).announce(communityId, text);
  }
}
