/** A failure whose message is written for the model: it becomes the call's result as is. */
export class ToolError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ToolError';
  }
}
