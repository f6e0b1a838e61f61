/** One block of a tool result's `content`, as far as we read it: what the MCP spec defines, and whatever a server sends beyond it. */
interface ContentBlock {
  type: string;
  text?: unknown;
  data?: unknown;
  mimeType?: unknown;
  uri?: unknown;
  name?: unknown;
  resource?: { uri?: unknown; text?: unknown; blob?: unknown; mimeType?: unknown };
}

/** What `callTool` answers: a result with content, or the protocol's older `toolResult`. */
export interface McpCallAnswer {
  content?: unknown;
  structuredContent?: unknown;
  isError?: unknown;
  toolResult?: unknown;
}

const text = (value: unknown): string | null => (typeof value === 'string' ? value : null);

/** Base64 data's decoded size, which is all the model can learn of an image it cannot see here. */
const decodedBytes = (data: unknown): number => (typeof data === 'string' ? Buffer.byteLength(data, 'base64') : 0);

/** A block as a line of text: its text where it has one, else what it is (`[image image/png, 1234 bytes]`). */
function blockText(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return text(block.text) ?? '';
    case 'image':
    case 'audio':
      return `[${block.type} ${text(block.mimeType) ?? 'of unknown type'}, ${decodedBytes(block.data)} bytes]`;
    case 'resource': {
      const resource = block.resource ?? {};
      const uri = text(resource.uri) ?? 'without a uri';
      return text(resource.text) ?? `[resource ${uri}, ${text(resource.mimeType) ?? 'of unknown type'}, ${decodedBytes(resource.blob)} bytes]`;
    }
    case 'resource_link': {
      const name = text(block.name);
      return `[resource link ${text(block.uri) ?? 'without a uri'}${name ? ` (${name})` : ''}]`;
    }
    default:
      return `[${String(block.type)} content]`;
  }
}

const isBlock = (value: unknown): value is ContentBlock => typeof value === 'object' && value !== null && typeof (value as { type?: unknown }).type === 'string';

/**
 * A tool result as the text a model reads: each content block on its own
 * line, and the structured content as JSON when no block carried text (a
 * server may send its answer only there).
 */
export function answerText(answer: McpCallAnswer): string {
  if (!('content' in answer) && 'toolResult' in answer) return JSON.stringify(answer.toolResult) ?? '';
  const blocks = Array.isArray(answer.content) ? answer.content.filter(isBlock) : [];
  const lines = blocks.map(blockText);
  const hasText = blocks.some((block) => block.type === 'text' || (block.type === 'resource' && text(block.resource?.text) !== null));
  if (!hasText && answer.structuredContent !== undefined) lines.push(JSON.stringify(answer.structuredContent));
  return lines.join('\n');
}
