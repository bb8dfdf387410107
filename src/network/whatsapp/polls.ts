/**
 * Poll votes arrive encrypted with the poll's secret (`messageContextInfo.messageSecret` of the stored
 * poll). The key also binds the poll creator's and the voter's addresses as the voter's phone saw
 * them — phone JID or LID — so every combination is tried until the AES-GCM tag verifies.
 */
import { decryptPollVote, sha256, type proto } from 'baileys';

export interface DecryptedVote {
  /** Lowercase hex SHA-256 of each chosen option name. */
  hashes: string[];
  /** The voter address that decrypted the vote. */
  voterJid: string;
}

export function decryptVote(
  vote: proto.Message.IPollEncValue,
  pollMessageId: string,
  secret: Uint8Array,
  creatorCandidates: string[],
  voterCandidates: string[],
): DecryptedVote | undefined {
  if (!vote.encPayload || !vote.encIv) return undefined;
  const encrypted = { encPayload: vote.encPayload, encIv: vote.encIv };
  for (const pollCreatorJid of creatorCandidates) {
    for (const voterJid of voterCandidates) {
      try {
        const decrypted = decryptPollVote(encrypted, { pollCreatorJid, pollMsgId: pollMessageId, pollEncKey: secret, voterJid });
        return { hashes: (decrypted.selectedOptions ?? []).map((hash) => Buffer.from(hash).toString('hex')), voterJid };
      } catch {
        // Not this address combination: the GCM tag does not verify.
      }
    }
  }
  return undefined;
}

export function optionHash(name: string): string {
  return sha256(Buffer.from(name)).toString('hex');
}

/** Option names by hash, from a poll creation message (v1, v2 or v3). */
export function pollOptions(creation: proto.Message.IPollCreationMessage): Map<string, string> {
  return new Map((creation.options ?? []).map((option) => [optionHash(option.optionName ?? ''), option.optionName ?? '']));
}

/** The running tally from the latest vote of each voter (voter -> chosen hashes). */
export function tally(options: Map<string, string>, votes: Map<string, string[]>): { name: string; voters: string[] }[] {
  return [...options.entries()].map(([hash, name]) => ({
    name,
    voters: [...votes.entries()].filter(([, chosen]) => chosen.includes(hash)).map(([voter]) => voter),
  }));
}
