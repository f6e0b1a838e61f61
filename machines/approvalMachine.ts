import { setup } from 'xstate';

/**
 * A pending domain fact, not a callback. Two confirmations are kept apart on
 * purpose: the decision is recorded (approved/denied), and later the provider
 * confirms it consumed it (consumed) or it never got there (undelivered).
 */
export type ApprovalEvent =
  | { type: 'approval.granted'; by: string }
  | { type: 'approval.denied'; by: string }
  | { type: 'approval.cancelled'; reason: string }
  | { type: 'approval.expired' }
  | { type: 'approval.consumed' }
  | { type: 'approval.undelivered'; reason: string };

export interface ApprovalContext {
  approvalId: string;
}

export const approvalEventDescriptions: Record<ApprovalEvent['type'], string> = {
  'approval.granted': 'An authorised client allowed the request; recorded before the provider hears of it.',
  'approval.denied': 'An authorised client refused the request.',
  'approval.cancelled': 'The turn that asked was interrupted, failed or repaired; nobody needs an answer any more.',
  'approval.expired': 'The deadline passed without an answer.',
  'approval.consumed': 'The provider confirmed it acted on the decision.',
  'approval.undelivered': 'The decision was recorded but never reached the provider (the turn ended first).',
};

export const approvalMachine = setup({
  types: {
    context: {} as ApprovalContext,
    events: {} as ApprovalEvent,
    input: {} as { approvalId: string },
  },
}).createMachine({
  id: 'approval',
  description: 'A request for a person to allow a tool call, answerable from any client.',
  context: ({ input }) => ({ approvalId: input.approvalId }),
  initial: 'pending',
  states: {
    pending: {
      description: 'Waiting for an answer; survives restarts and shows on every client.',
      on: {
        'approval.granted': 'approved',
        'approval.denied': 'denied',
        'approval.cancelled': 'cancelled',
        'approval.expired': 'expired',
      },
    },
    approved: {
      description: 'Allowed and recorded; the provider has not yet confirmed it.',
      on: { 'approval.consumed': 'consumed', 'approval.undelivered': 'undelivered' },
    },
    denied: {
      description: 'Refused and recorded; the provider has not yet confirmed it.',
      on: { 'approval.consumed': 'consumed', 'approval.undelivered': 'undelivered' },
    },
    cancelled: { type: 'final', description: 'Withdrawn before anyone answered.' },
    expired: { type: 'final', description: 'Nobody answered in time.' },
    consumed: { type: 'final', description: 'The provider acted on the decision.' },
    undelivered: { type: 'final', description: 'The decision never reached the provider.' },
  },
});
