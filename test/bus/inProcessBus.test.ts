import { InProcessHub } from '../../bus/index.ts';
import { busContract } from './busContract.ts';

busContract('in-process', async () => {
  const hub = new InProcessHub();
  return { connect: async () => hub.connect(), dispose: async () => undefined };
});
