import { z } from 'zod';
import { configSchema } from './configSchema.ts';

interface JsonSchema {
  type?: string | string[];
  description?: string;
  default?: unknown;
  defaultText?: string;
  enum?: unknown[];
  const?: unknown;
  pattern?: string;
  format?: string;
  minimum?: number;
  maximum?: number;
  minLength?: number;
  maxLength?: number;
  maxItems?: number;
  properties?: Record<string, JsonSchema>;
  required?: string[];
  additionalProperties?: JsonSchema | boolean;
  propertyNames?: JsonSchema;
  items?: JsonSchema;
  anyOf?: JsonSchema[];
}

/** The JSON Schema of the configuration file, with the words-only defaults kept (the reference shows them). */
function jsonSchemaWithNotes(): JsonSchema {
  return z.toJSONSchema(configSchema, { io: 'input', unrepresentable: 'any' }) as JsonSchema;
}

/** docs/config.schema.json: the configuration's JSON Schema, for editors (point `$schema` at it). */
export function renderConfigJsonSchema(): string {
  const schema = z.toJSONSchema(configSchema, {
    io: 'input',
    unrepresentable: 'any',
    // A default in words is for people: a JSON Schema `default` must be a value an editor could insert.
    override: ({ jsonSchema }) => {
      const notes = jsonSchema as { defaultText?: string; description?: string };
      if (notes.defaultText !== undefined) {
        notes.description = `${notes.description ?? ''} (default: ${notes.defaultText})`.trim();
        delete notes.defaultText;
      }
    },
  });
  return `${JSON.stringify({ ...schema, title: 'turnloom configuration' }, null, 2)}\n`;
}

const huge = Number.MAX_SAFE_INTEGER;

/** A key's type in a few words: `integer, 1000 to 100000000`, `"ask" | "full"`, `list of rule`. */
function typeOf(schema: JsonSchema): string {
  if (schema.enum) return schema.enum.map((value) => `\`${JSON.stringify(value)}\``).join(' | ');
  if (schema.const !== undefined) return `\`${JSON.stringify(schema.const)}\``;
  if (schema.anyOf) return [...new Set(schema.anyOf.map(typeOf))].join(' or ');
  const type = Array.isArray(schema.type) ? schema.type.join(' or ') : schema.type;
  switch (type) {
    case 'integer':
    case 'number': {
      const bounds = [schema.minimum !== undefined ? `≥ ${schema.minimum}` : '', schema.maximum !== undefined && schema.maximum < huge ? `≤ ${schema.maximum}` : ''].filter(Boolean);
      return `${type}${bounds.length > 0 ? ` ${bounds.join(', ')}` : ''}`;
    }
    case 'string':
      return schema.format === 'uri' ? 'URL' : schema.pattern ? `string matching \`${schema.pattern}\`` : 'string';
    case 'array':
      return `list of ${schema.items ? typeOf(schema.items) : 'values'}`;
    case 'object':
      if (schema.properties) return 'object';
      return typeof schema.additionalProperties === 'object' ? `map of ${typeOf(schema.additionalProperties)}` : 'object';
    default:
      return type ?? 'any';
  }
}

const cell = (text: string) => text.replaceAll('|', '\\|').replaceAll('\n', ' ');
const defaultOf = (schema: JsonSchema) => (schema.default !== undefined ? `\`${JSON.stringify(schema.default)}\`` : schema.defaultText !== undefined ? cell(schema.defaultText) : '');

interface Row {
  key: string;
  type: string;
  default: string;
  description: string;
}

/** Every key under `schema`, depth first: an object's keys, a map's entries as `<name>`, each branch of a union. */
function rows(schema: JsonSchema, path: string, out: Row[]): void {
  if (schema.anyOf) {
    for (const branch of schema.anyOf) rows({ ...branch, description: branch.description ?? schema.description }, path, out);
    return;
  }
  if (schema.properties) {
    for (const [key, child] of Object.entries(schema.properties)) {
      const childPath = path ? `${path}.${key}` : key;
      out.push({ key: childPath, type: child.anyOf ? 'object' : typeOf(child), default: defaultOf(child), description: cell(child.description ?? '') });
      rows(child, childPath, out);
    }
    return;
  }
  const entry = typeof schema.additionalProperties === 'object' ? schema.additionalProperties : null;
  if (entry && (entry.properties || entry.anyOf)) rows(entry, `${path}.<name>`, out);
  else if (schema.items?.properties) rows(schema.items, `${path}[]`, out);
}

/** The reference section of docs/config.md: every key with its type, default and description, from the schema. */
export function renderConfigReference(): string {
  const schema = jsonSchemaWithNotes();
  const out: Row[] = [];
  rows(schema, '', out);
  // The branches of a union share some keys (an MCP server's timeoutMs): each is listed once.
  const unique = out.filter((row, index) => out.findIndex((other) => other.key === row.key) === index);
  const lines = ['| Key | Type | Default | Description |', '| --- | --- | --- | --- |', ...unique.map((row) => `| \`${row.key}\` | ${cell(row.type)} | ${row.default} | ${row.description} |`)];
  return `${lines.join('\n')}\n`;
}
