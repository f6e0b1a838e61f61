#!/usr/bin/env node
// Runs the TypeScript sources directly so a fresh clone needs no build step.
import { register } from 'tsx/esm/api';

register();
await import('../cli/main.ts');
