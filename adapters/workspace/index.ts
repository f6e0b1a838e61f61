export { projectInstructions, INSTRUCTIONS_LIMITS } from './projectInstructions.ts';
