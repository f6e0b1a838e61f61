import { demoPrompt } from './demo/loginRaceProject.ts';

// What each command accepts, as `--help` says it: kept apart from the commands,
// so help and a mistyped option answer without loading what a command runs on.

/** The API keeps 4096 bytes of each message for headers, so a payload limit below this leaves no room for `health`. */
export const MIN_MAX_PAYLOAD = 8_192;

export const DEFAULT_INSPECT_PORT = 4280;

export const logUsage = `  --log-format F      pretty (one line per thing, the default on a terminal) or json (one object per line,
                      the default otherwise), on standard error
  --log-level L       debug, info (default), warn, error or silent`;

export const runUsage = `turnloom run "<prompt>" [options]   one turn on the workspace, engine and worker in this process
  turnloom run - [options]            the same, the prompt read from standard input (to its end)
  --cwd DIR           the workspace the agent works in (default: this folder)
  --provider NAME     scripted, anthropic, openai-chat or openai-responses (default: the first with a key)
  --model NAME        the provider's model
  --approve POLICY    ask (default in a terminal), auto (allow all), or deny (default otherwise)
  --mode MODE         ask, auto-edits, full or read-only: what runs without asking
  --agent NAME        build (default: does the work), plan (reads and proposes; changes nothing), explore, general,
                      or one the configuration defines (docs/agents.md)
  --data DIR          keep the threads in this LMDB folder (default: one for this workspace under
                      $XDG_DATA_HOME/turnloom, never inside the workspace)
  --continue, -c      continue the thread that ran last in this workspace (or --data folder)
  --thread ID         continue this thread (it must be in the --data folder, or this workspace's)
  --script FILE       script for the scripted provider (see docs/providers.md)
  --context-window N  the model's context window in tokens, when its known one is wrong or unknown
  --verbose           show every tool call's output (default: the tail of a failed one's)
  --no-diff           end without the turn's diff (the changed files and their counts are still listed)
  --timeout S         interrupt the turn after S seconds and exit 124 (so a CI job never hangs on a run)
  --json              JSON Lines on stdout as the turn runs (thread.started, text.delta, tool.started, approval.requested…,
                      turn.settled), the last line { type: "summary", threadId, title, turnId, status, error, text,
                      toolCalls, approvals, checkpoint, usage }; notes go to stderr (docs/run-json.md)
  Colour in a terminal, unless NO_COLOR is set (FORCE_COLOR forces it, on a pipe too).
  In a terminal, a line typed while the turn runs is steered into it (the model reads it at its next step);
  start the line with /queue to run it as the next turn instead. A question is answered with one key (y, a, n), no Enter.
  The report is of the last turn that ran.
  Keys: OPENAI_API_KEY (+ OPENAI_BASE_URL for any OpenAI-compatible server; a local one needs no key), ANTHROPIC_API_KEY.
  Configuration: $XDG_CONFIG_HOME/turnloom/config.json and turnloom.json in the workspace (docs/config.md);
  flags and the variables above win over them.`;

export const demoUsage = `turnloom demo [options]   the seed scenario on a scratch git repository, with the scripted provider
  --prompt TEXT       what to ask (default: "${demoPrompt}")
  --data DIR          LMDB data folder (default: demo under $XDG_DATA_HOME/turnloom)
  --dir DIR           build the scratch project here, an empty or new folder, and keep it (default: a temporary one)
  --deny              refuse the test runs instead of allowing them
  --script FILE       another script for the scripted provider (see docs/providers.md)
  --json              print { threadId, title, status, approvals, toolCalls, checkpoint: { files, summary }, events } and nothing else`;

export const serveUsage = `turnloom serve [options]
  --nats URL          serve on this NATS server (default: the in-process bus, reachable only from this process)
  --nats-user USER    NATS user name (or TURNLOOM_NATS_USER); its password comes from TURNLOOM_NATS_PASS, a token
                      from TURNLOOM_NATS_TOKEN, never from the command line, where ps shows it
  --nats-creds FILE   NATS credentials file (user JWT and NKEY seed, as nsc writes it)
  --inbox-prefix P    the inbox prefix this NATS user may read (e.g. _INBOX_engine; default _INBOX)
  --data DIR          LMDB data folder (default: one for the workspace under $XDG_DATA_HOME/turnloom, the same
                      folder \`turnloom run\` uses there; never inside the workspace)
  --prefix P          subject prefix (default turnloom)
  --auth FILE         tokens and scopes as JSON: {"tokens":{"<token>":{"principal":"alice","scopes":["read","operate"]}}};
                      "inboxPrefix":"_INBOX_alice" in an entry: answers to that token go only to that inbox space
  --script FILE       script for the scripted provider (see docs/providers.md)
  --max-payload N     largest request in bytes (default 1048576, or the NATS server's max_payload if smaller;
                      at least ${MIN_MAX_PAYLOAD}, at most the server's max_payload)
  --approval-timeout S  an approval nobody answers expires after S seconds (default: never)
  --lease-timeout S   a worker silent this long loses its turns, which resume on another (default 10)
  --max-running-turns N  at most N turns run at once; past it new ones wait, requested (default 500)
  --max-waiting-turns N  past N turns waiting for a slot, turn.start is refused with overloaded (default 5000)
  --context-window N  the model's context window in tokens, when its known one is wrong or unknown: a request
                      estimated over it compacts older turns first (default: the model's, if known)
  --workspace DIR     the folder the local worker's agent works in (default: this folder)
  --no-worker         run the engine alone: turns wait for workers started with \`turnloom worker\`
                      (and reads only the user configuration file, not the workspace's turnloom.json)
  --cluster           one engine of a cluster (needs --nats URL[,URL…]): threads' logs live in the NATS server's
                      JetStream, spread over shards each owned by one engine at a time and taken over when its
                      engine dies, and this folder is the engine's copy of its shards (see docs/cluster.md)
  --replicas N        copies JetStream keeps of the cluster's log (default: 3 on a clustered NATS server, else 1)
  --shards N          how many shards a new cluster's log has (default 64; fixed once the log is made: several
                      times the most engines the cluster will run)
${logUsage}
  --inspect PORT      also serve the live state-chart inspector on http://127.0.0.1:PORT (0 picks a free port);
                      with --auth, its page calls the API with the token in TURNLOOM_TOKEN`;

export const workerUsage = `turnloom worker --nats URL --workspace DIR [options]   run turns for an engine elsewhere
  --nats URL          the NATS server the engine serves on (credentials as for serve: --nats-user,
                      TURNLOOM_NATS_PASS, TURNLOOM_NATS_TOKEN or --nats-creds FILE)
  --inbox-prefix P    the inbox prefix this NATS user may read (e.g. _INBOX_worker; default _INBOX)
  --workspace DIR     the folder this worker works in
  --env NAME          the environment it serves (default default): it runs the turns of threads that name it
  --id ID             its worker id (default: made up)
  --prefix P          subject prefix (default turnloom)
  --script FILE       script for the scripted provider; provider keys come from this worker's environment
                      (the configuration files say which variables: docs/config.md)
  --concurrency N     turns it runs at once (default 64)
  --context-window N  the model's context window in tokens, when its known one is wrong or unknown: a request
                      estimated over it compacts older turns first (default: the model's, if known)
${logUsage}`;

export const replayUsage = `turnloom replay <file.chunks.txt> --provider anthropic|openai-chat|openai-responses [--json]
  serves a recorded stream (one JSON chunk per line) to the real SDK from a local
  HTTP server, runs it through adapter → ingestion → engine, and prints the turn;
  a recording of several responses plays one per model call`;

export const inspectUsage = `turnloom inspect [options]   the live state-chart inspector for an engine on NATS, in the browser
  --nats URL          the NATS server the engine serves on (default nats://127.0.0.1:4222; credentials as for serve:
                      --nats-user, TURNLOOM_NATS_PASS, TURNLOOM_NATS_TOKEN or --nats-creds FILE)
  --inbox-prefix P    the inbox prefix this NATS user may read (default _INBOX)
  --port P            the page's port on 127.0.0.1 (default ${DEFAULT_INSPECT_PORT}; 0 picks a free one)
  --prefix P          subject prefix (default turnloom)
  The page calls the API with the token in TURNLOOM_TOKEN (answering approvals needs the operate scope).
${logUsage}
  With the embedded engine, use turnloom serve --inspect PORT instead.`;

export const mcpUsage = `turnloom mcp add NAME [--env K=V]... -- COMMAND ARGS...   add a stdio server to the user file
turnloom mcp add NAME --url URL [--header K:V]... [--transport sse]   add an HTTP server to the user file
turnloom mcp list [--cwd DIR] [--json]   the user file's servers and those the project offers (allowed or not)
turnloom mcp remove NAME                 remove a server from the user file
turnloom mcp allow NAME [--cwd DIR]      allow a server the project asks for (turnloom.json or .mcp.json) until its spec changes
  Values may name variables (\${GITHUB_TOKEN}); see docs/mcp.md.`;

const threadFolderUsage = `  --cwd DIR           the workspace whose threads these are (default: this folder)
  --data DIR          the LMDB data folder (default: the one \`turnloom run\` uses for the workspace)
  --json              print one JSON document and nothing else`;

export const threadsUsage = `turnloom threads [options]   the workspace's threads, newest first: id, state, turns, last active (relative), title
  --all               archived threads too
${threadFolderUsage}
  A folder another turnloom process holds (a run going, serve) is refused in one line; try again once it ends.`;

export const showUsage = `turnloom show [THREAD] [options]   a thread's turns: input, tool calls and their outcome, approvals, answer, changes
  THREAD              a thread id (default: the thread that ran last here, the one run --continue takes)
  --request           also what each turn's model calls were told: its context and the system prompt (with the tools)
${threadFolderUsage}`;

export const undoUsage = `turnloom undo [THREAD] [options]   put back the files the thread's last turn changed (and drop that turn from the model's view)
  THREAD              a thread id (default: the thread that ran last here)
  --force             also put back files changed since that turn (refused otherwise: nothing is reverted)
${threadFolderUsage}
  The work tree is saved as a git ref before anything changes. Run it again to undo the turn before, and so on,
  as long as the turn it reaches changed files. Needs a git repository (turns elsewhere keep no checkpoints).`;

export const configUsage = `turnloom config [--cwd DIR] [--json]   the configuration a command run here uses, and where each value came from
  --cwd DIR           the workspace whose turnloom.json is read (default: this folder)
  --json              print { files: { user, project }, values: [{ path, value, source }] } and nothing else
  One line a value: path = value  (default | user file F | project file F | environment VARIABLE | offered by F),
  the user file over the defaults, the project file over it, the environment over both (comments and trailing
  commas are allowed in the files); the flags of run, serve and worker win over all of it. Keys are shown by their variables' names (apiKeyEnv); an MCP server's
  env and headers values only by their \${VAR}s, the rest as ***.`;
