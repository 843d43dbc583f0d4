/**
 * The workspace's members as deciders of a hold: each with their groups and mapped agents, and who
 * delegated to whom. Read in one statement; every place that asks "may this member decide, and for
 * whom?" (a decision, the app, who is notified or reminded) asks it here.
 */
import {
  type Capacity,
  type Decider,
  decisionCapacity,
  delegationInForce,
  type PastDecision,
} from '../domain/four-eyes.ts';
import type { Hold } from '../domain/hold.ts';
import type { Sql } from '../store/db.ts';
import { listMembersWithGroups, type Member } from '../store/members.ts';

export interface Deciders {
  members: Member[];
  byId: Map<string, Member>;
  capacity(
    hold: Pick<Hold, 'status' | 'expiresAt' | 'approvers' | 'agentId' | 'requestedFor'>,
    member: Member,
    decisions: readonly PastDecision[],
    now: number,
    /** Decided in the requesting member's own MCP client, under a `self_approval` rule. */
    inOwnClient?: boolean,
  ): Capacity;
  /** Out of office: the member's delegate while their delegation is in force and the delegate is not away too. */
  delegateOf(member: Member, now: number): Member | null;
}

export async function loadDeciders(sql: Sql, workspaceId: string): Promise<Deciders> {
  const rows = await listMembersWithGroups(sql, workspaceId);
  const deciderOf = new Map<string, Decider>(
    rows.map(({ member, groups }) => [member.id, { ...member, groups, agents: member.agents }]),
  );
  const members = rows.map((row) => row.member);
  const byId = new Map(members.map((member) => [member.id, member]));
  const inForce = (member: Member | undefined, now: number) =>
    member !== undefined &&
    delegationInForce(member.delegation, now) &&
    byId.has(member.delegation!.delegateId);
  return {
    members,
    byId,
    capacity(hold, member, decisions, now, inOwnClient) {
      const delegators = members
        .filter((other) => other.delegation?.delegateId === member.id && inForce(other, now))
        .map((other) => deciderOf.get(other.id)!);
      return decisionCapacity(hold, deciderOf.get(member.id)!, delegators, decisions, now, inOwnClient);
    },
    delegateOf(member, now) {
      // Delegations do not chain: with both away, the first one is asked after all.
      const delegate = inForce(member, now) ? byId.get(member.delegation!.delegateId) : undefined;
      return delegate && !inForce(delegate, now) ? delegate : null;
    },
  };
}
