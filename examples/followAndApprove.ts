// A client of an engine on NATS: it starts a turn, prints the answer as it is typed, and answers the
// turn's approvals as they come: edits are allowed, commands refused. Any other client could answer them too.
import { NatsBus, TurnloomClient } from 'turnloom/client';

const bus = await NatsBus.connect({ servers: process.env.NATS_URL ?? 'nats://127.0.0.1:4222' });
const client = new TurnloomClient(bus, { ...(process.env.TURNLOOM_TOKEN ? { token: process.env.TURNLOOM_TOKEN } : {}) });
try {
  const turn = await client.startTurn({
    text: process.argv[2] ?? 'Look at this project and tell me what it does.',
    onApproval: (approval) => {
      console.log(`\n[${approval.kind} ${approval.subject}: ${approval.kind === 'command' ? 'refused' : 'allowed'}]`);
      return approval.kind === 'command' ? 'deny' : 'approve';
    },
  });
  console.log(`thread ${turn.threadId}, turn ${turn.turnId}`);
  for await (const piece of turn.text()) process.stdout.write(piece);
  const settled = await turn.done;
  console.log(`\n${settled.state}${settled.error ? `: ${settled.error}` : ''}`);
} finally {
  await bus.close();
}
