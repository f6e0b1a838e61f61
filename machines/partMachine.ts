import { setup } from 'xstate';

import type { PartKind } from '../domain/index.ts';

export type { PartKind };

/**
 * One piece of an assistant message. Text and reasoning parts stream content;
 * a tool part streams its input, may wait for approval, and runs. The two
 * shapes start with different events so the chart itself forbids a text delta
 * on a tool part and a tool result on a text part.
 */
export type PartEvent =
  | { type: 'content.started' }
  | { type: 'content.delta'; text: string }
  | { type: 'content.completed' }
  | { type: 'tool.started'; toolCallId: string; toolName: string }
  | { type: 'tool.inputDelta'; text: string }
  | { type: 'tool.inputReady' }
  | { type: 'approval.requested'; approvalId: string }
  | { type: 'approval.granted'; approvalId: string }
  | { type: 'approval.denied'; approvalId: string }
  | { type: 'approval.expired'; approvalId: string }
  | { type: 'tool.executing' }
  | { type: 'tool.result' }
  | { type: 'tool.failed'; error: string }
  | { type: 'part.failed'; error: string }
  | { type: 'part.interrupted'; reason: string };

export interface PartContext {
  partId: string;
  kind: PartKind;
}

export const partEventDescriptions: Record<PartEvent['type'], string> = {
  'content.started': 'A text or reasoning segment opened in the model output.',
  'content.delta': 'More text for an open text or reasoning segment.',
  'content.completed': 'The segment closed; its text is final.',
  'tool.started': 'The model began a tool call; its name and id are known, its input is not yet complete.',
  'tool.inputDelta': 'More of the tool call input (JSON text) arrived.',
  'tool.inputReady': 'The input is complete and parsed; the call may be approved or run.',
  'approval.requested': 'The call needs a person to allow it before it runs.',
  'approval.granted': 'Allowed; the call is ready to run again, not yet running.',
  'approval.denied': 'Refused; the call ends in error and never runs.',
  'approval.expired': 'Nobody answered in time; the call ends in error and never runs.',
  'tool.executing': 'The tool is running now; from here a crash means its outcome is unknown.',
  'tool.result': 'The tool finished and returned its output.',
  'tool.failed': 'The tool ran and failed; the failure is its result.',
  'part.failed': 'The part cannot be finished (the stream broke mid-part).',
  'part.interrupted': 'The turn was stopped or repaired while this part was open.',
};

export const partMachine = setup({
  types: {
    context: {} as PartContext,
    events: {} as PartEvent,
    input: {} as { partId: string; kind: PartKind },
  },
}).createMachine({
  id: 'part',
  description: 'One piece of an assistant message: text, reasoning or a tool call.',
  context: ({ input }) => ({ partId: input.partId, kind: input.kind }),
  initial: 'pending',
  states: {
    pending: {
      description: 'Announced but not yet started.',
      on: {
        'content.started': 'running.content',
        'tool.started': 'running.tool',
        'part.interrupted': 'interrupted',
      },
    },
    running: {
      description: 'Content or a tool call is in flight.',
      initial: 'content',
      on: {
        'part.failed': 'error',
        'part.interrupted': 'interrupted',
      },
      states: {
        content: {
          description: 'Text or reasoning is streaming.',
          on: {
            'content.delta': 'content',
            'content.completed': '#part.completed',
          },
        },
        tool: {
          description: 'A tool call on its way from input to result.',
          initial: 'inputStreaming',
          states: {
            inputStreaming: {
              description: 'The call input is still arriving.',
              on: {
                'tool.inputDelta': 'inputStreaming',
                'tool.inputReady': 'inputReady',
              },
            },
            inputReady: {
              description: 'Complete input, not running: safe to run or retry.',
              on: {
                'approval.requested': 'awaitingApproval',
                'tool.executing': 'executing',
              },
            },
            awaitingApproval: {
              description: 'Waiting for a person to allow or refuse the call.',
              on: {
                'approval.granted': 'inputReady',
                'approval.denied': '#part.error',
                'approval.expired': '#part.error',
              },
            },
            executing: {
              description: 'The tool is running; only a result or a failure closes it.',
              on: {
                'tool.result': '#part.completed',
                'tool.failed': '#part.error',
              },
            },
          },
        },
      },
    },
    completed: { type: 'final', description: 'Finished with its content or tool result.' },
    error: { type: 'final', description: 'Finished with an error (failed, refused, broken stream).' },
    interrupted: { type: 'final', description: 'Stopped before it could finish.' },
  },
});
