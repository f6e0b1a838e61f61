import { assign, setup } from 'xstate';
import type { InterruptCause } from '../domain/domainEvents.ts';

/**
 * One user input and the agent's whole answer to it: a loop of steps (one
 * model call each, then the tools it asked for). The machine keeps steps
 * paired: a turn settles only between steps, so every `step.started` has its
 * `step.finished` before the turn closes, on every path including interrupts.
 */
export type TurnEvent =
  | { type: 'turn.started' }
  | { type: 'input.steered' }
  | { type: 'input.claimed'; count: number }
  | { type: 'context.replaced' }
  | { type: 'request.context' }
  | { type: 'request.header' }
  | { type: 'step.started'; step: number }
  | { type: 'response.started' }
  | { type: 'part.started'; partId: string }
  | { type: 'response.completed' }
  | { type: 'tools.started'; toolCallIds: readonly string[] }
  | { type: 'tool.executing'; toolCallId: string }
  | { type: 'approval.requested'; approvalId: string }
  | { type: 'approval.granted'; approvalId: string }
  | { type: 'approval.denied'; approvalId: string }
  | { type: 'approval.expired'; approvalId: string }
  | { type: 'step.finished'; step: number }
  | { type: 'turn.completed' }
  | { type: 'turn.failed'; error: string }
  | { type: 'turn.interruptRequested'; reason: string }
  | { type: 'turn.interrupted'; cause: InterruptCause };

export interface TurnContext {
  turnId: string;
  step: number;
  /** Steered input not yet claimed by a step. */
  waitingInputs: number;
  /** How often what the model reads was replaced (compactions and hooks). */
  replacements: number;
}

export const turnEventDescriptions: Record<TurnEvent['type'], string> = {
  'turn.started': 'A worker picked the turn up; until then it is only an accepted intent.',
  'input.steered': 'A client steered input into the open turn; it waits in the turn’s inbox, and a model call already streaming is not disturbed.',
  'input.claimed': 'The worker took waiting input into the step it is about to start; only between steps, so a step’s request never changes mid-call.',
  'context.replaced': 'What the model reads from the next step on was replaced (a compaction, or a worker’s hook); only between steps.',
  'request.context': 'The worker recorded what the turn’s prompt is built from (workspace, git, project instructions, agent); only between steps.',
  'request.header': 'The worker recorded what the next model calls are told beyond the conversation (system prompt, tools, model); only between steps.',
  'step.started': 'One model call begins; opens a step that must be finished before the turn can settle.',
  'response.started': 'The provider began its answer to this step’s call; a second start in the same step is refused.',
  'part.started': 'The model produced its first (or next) piece of output in this step.',
  'response.completed': 'The provider finished its answer (with a stop reason); a second completion is refused.',
  'tools.started': 'The answer asked for tools; the harness now runs them in order.',
  'tool.executing': 'A tool starts running; refused once an interrupt is recorded, so nothing starts after a stop.',
  'approval.requested': 'A tool needs a person to allow it; the turn waits on a durable fact, not a callback.',
  'approval.granted': 'The pending approval was allowed; tools continue.',
  'approval.denied': 'The pending approval was refused; the tool gets an error result and tools continue.',
  'approval.expired': 'Nobody answered the approval before its deadline; treated like a refusal.',
  'step.finished': 'The model call and its tools are done (or abandoned); closes the step.',
  'turn.completed': 'The model stopped asking for tools; the answer is complete.',
  'turn.failed': 'The turn cannot go on (provider error, retries exhausted, session lost).',
  'turn.interruptRequested': 'A client asked to stop; the intent is recorded before anything is cancelled.',
  'turn.interrupted': 'The stop is confirmed by the provider, by the deadline, or by crash repair.',
};

export const turnMachine = setup({
  types: {
    context: {} as TurnContext,
    events: {} as TurnEvent,
    input: {} as { turnId: string },
  },
  actions: {
    countStep: assign({ step: ({ context }) => context.step + 1 }),
    countReplacement: assign({ replacements: ({ context }) => context.replacements + 1 }),
    noteSteered: assign({ waitingInputs: ({ context }) => context.waitingInputs + 1 }),
    noteClaimed: assign({ waitingInputs: ({ context, event }) => Math.max(0, context.waitingInputs - (event.type === 'input.claimed' ? event.count : 0)) }),
  },
}).createMachine({
  id: 'turn',
  description: 'From one user input to the complete answer, through a loop of steps.',
  context: ({ input }) => ({ turnId: input.turnId, step: 0, waitingInputs: 0, replacements: 0 }),
  initial: 'requested',
  states: {
    requested: {
      description: 'Accepted and durable, but no worker has started it yet.',
      on: {
        'turn.started': 'running',
        'input.steered': { actions: 'noteSteered' },
        'turn.failed': 'failed',
        'turn.interruptRequested': 'interrupting.stepClosed',
      },
    },
    running: {
      description: 'A worker drives the step loop.',
      initial: 'betweenSteps',
      on: { 'input.steered': { actions: 'noteSteered' } },
      states: {
        betweenSteps: {
          description: 'No step is open: the next model call may start, or the turn may settle.',
          on: {
            'step.started': { target: 'requesting', actions: 'countStep' },
            'input.claimed': { actions: 'noteClaimed' },
            'context.replaced': { actions: 'countReplacement' },
            'request.context': 'betweenSteps',
            'request.header': 'betweenSteps',
            'turn.completed': '#turn.completed',
            'turn.failed': '#turn.failed',
            'turn.interruptRequested': '#turn.interrupting.stepClosed',
          },
        },
        requesting: {
          description: 'The model call is sent and no output has arrived yet.',
          on: {
            'response.started': 'streaming',
            'part.started': 'streaming',
            'step.finished': 'betweenSteps',
            'turn.interruptRequested': '#turn.interrupting.stepOpen',
          },
        },
        streaming: {
          description: 'Output parts are arriving from the model.',
          on: {
            'part.started': 'streaming',
            'response.completed': 'responded',
            'step.finished': 'betweenSteps',
            'turn.interruptRequested': '#turn.interrupting.stepOpen',
          },
        },
        responded: {
          description: 'The answer is complete; it either asks for tools or ends the step.',
          on: {
            'tools.started': 'runningTools',
            'step.finished': 'betweenSteps',
            'turn.interruptRequested': '#turn.interrupting.stepOpen',
          },
        },
        runningTools: {
          description: 'The tools the model asked for run one after another.',
          on: {
            'tool.executing': 'runningTools',
            'approval.requested': 'awaitingApproval',
            'step.finished': 'betweenSteps',
            'turn.interruptRequested': '#turn.interrupting.stepOpen',
          },
        },
        awaitingApproval: {
          description: 'A tool waits for a person; any authorised client may answer.',
          on: {
            'step.finished': 'betweenSteps',
            'approval.granted': 'runningTools',
            'approval.denied': 'runningTools',
            'approval.expired': 'runningTools',
            'turn.interruptRequested': '#turn.interrupting.stepOpen',
          },
        },
      },
    },
    interrupting: {
      description: 'Stop intent recorded; waiting for the provider or the deadline to confirm it.',
      initial: 'stepOpen',
      states: {
        stepOpen: {
          description: 'A step was open when the stop arrived (or its first answer was still on the way); it must be finished first.',
          // What the model said before the stop is kept: parts it had begun are recorded, then interrupted when the step closes.
          on: { 'step.finished': 'stepClosed', 'response.started': 'stepOpen', 'part.started': 'stepOpen' },
        },
        stepClosed: {
          description: 'No step is open; the turn may now settle.',
          on: {
            'turn.started': 'stepClosed',
            'request.context': 'stepClosed',
            'request.header': 'stepClosed',
            // A step the worker had begun when the stop arrived, written with its first words: recorded, then closed as interrupted.
            'step.started': { target: 'stepOpen', actions: 'countStep' },
            'turn.interrupted': '#turn.interrupted',
            'turn.completed': '#turn.completed',
            'turn.failed': '#turn.failed',
          },
        },
      },
    },
    completed: { type: 'final', description: 'The answer is complete.' },
    failed: { type: 'final', description: 'The turn ended in an error it could not recover from.' },
    interrupted: { type: 'final', description: 'The turn was stopped before it completed.' },
  },
});
