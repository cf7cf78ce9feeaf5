// An ACP client built on the official SDK (@agentclientprotocol/sdk), which
// the end-to-end tests use to drive `swivalctl acp` the way an editor does.
//
//   node driver.mjs <swivalctl> '<scenario json>'
//
// The scenario is {"steps": [...], "permission": "allow_once" | "allow_always"
// | "reject_once", "buffers": {"/abs/path": "unsaved text"}}; with "buffers"
// the client offers fs/read_text_file and answers it from them (else the
// disk). Steps run in order:
//   {"op": "new", "cwd": "/abs"}                  session/new (kept as the session)
//   {"op": "load", "session_id": "…", "cwd": "/abs"}
//   {"op": "list", "cwd": "/abs"}
//   {"op": "prompt", "text": "…", "cancel_on": "tool_call"}   cancel after that update
//                                                 ("sent": right after the prompt)
//   {"op": "prompt", "text": "…", "exit_on": "tool_call"}     exit hard after that update
//   {"op": "wait_text", "text": "…"}               until the agent's messages contain it
//   {"op": "set_config", "config_id": "model", "value": "…"}   session/set_config_option
// Every message is printed as one JSON line on stdout: {"type": "update" |
// "result" | "error" | "permission" | "invalid", ...}. Each session/update is
// also validated against the SDK's published JSON schema; a failure is an
// "invalid" line.

import { spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { Readable, Writable } from "node:stream";
import * as acp from "@agentclientprotocol/sdk";
import Ajv2020 from "ajv/dist/2020.js";

const [swivalctl, scenarioText] = process.argv.slice(2);
const scenario = JSON.parse(scenarioText);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");

const schemaPath = new URL("./node_modules/@agentclientprotocol/sdk/schema/v1/schema.json", import.meta.url);
const schema = JSON.parse(readFileSync(schemaPath, "utf8"));
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false, logger: false });
ajv.addSchema(schema, "acp");
const validUpdate = ajv.getSchema("acp#/$defs/SessionNotification");

const agent = spawn(swivalctl, ["acp"], { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(agent.stdin), Readable.toWeb(agent.stdout));

// Hooks the prompt step sets: called with each update.
let onUpdate = () => {};
// The agent's message text so far, and who waits for some of it.
let messageText = "";
let textWaiters = [];

const app = acp
  .client({ name: "swival-tests" })
  .onNotification(acp.methods.client.session.update, ({ params }) => {
    if (!validUpdate(params)) {
      out({ type: "invalid", errors: validUpdate.errors, params });
    }
    out({ type: "update", session: params.sessionId, update: params.update });
    if (params.update.sessionUpdate === "agent_message_chunk") {
      messageText += params.update.content.text ?? "";
      textWaiters = textWaiters.filter(([text, resolve]) => (messageText.includes(text) ? (resolve(), false) : true));
    }
    onUpdate(params.update);
  })
  .onRequest(acp.methods.client.fs.readTextFile, ({ params }) => {
    // The editor's buffers: unsaved text for the paths the scenario names,
    // the disk for the rest.
    out({ type: "read", path: params.path });
    const text = scenario.buffers?.[params.path] ?? readFileSync(params.path, "utf8");
    return { content: text };
  })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    out({ type: "permission", params });
    const wanted = scenario.permission ?? "reject_once";
    const option = params.options.find((o) => o.kind === wanted);
    if (!option) {
      return { outcome: { outcome: "cancelled" } };
    }
    return { outcome: { outcome: "selected", optionId: option.optionId } };
  });

await app.connectWith(stream, async (ctx) => {
  const init = await ctx.request(acp.methods.agent.initialize, {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: Boolean(scenario.buffers), writeTextFile: false } },
  });
  out({ type: "result", op: "initialize", result: init });
  let session = null;
  for (const step of scenario.steps) {
    try {
      if (step.op === "new") {
        const r = await ctx.request(acp.methods.agent.session.new, { cwd: step.cwd, mcpServers: step.mcpServers ?? [] });
        session = r.sessionId;
        out({ type: "result", op: "new", result: r });
      } else if (step.op === "load") {
        session = step.session_id;
        const r = await ctx.request(acp.methods.agent.session.load, { sessionId: session, cwd: step.cwd, mcpServers: [] });
        out({ type: "result", op: "load", result: r });
      } else if (step.op === "wait_text") {
        if (!messageText.includes(step.text)) {
          await new Promise((resolve) => textWaiters.push([step.text, resolve]));
        }
        out({ type: "result", op: "wait_text", result: {} });
      } else if (step.op === "set_config") {
        const r = await ctx.request(acp.methods.agent.session.setConfigOption, {
          sessionId: session,
          configId: step.config_id,
          value: step.value,
        });
        out({ type: "result", op: "set_config", result: r });
      } else if (step.op === "list") {
        const r = await ctx.request(acp.methods.agent.session.list, { cwd: step.cwd });
        out({ type: "result", op: "list", result: r });
      } else if (step.op === "prompt") {
        onUpdate = (u) => {
          if (step.cancel_on && u.sessionUpdate === step.cancel_on) {
            onUpdate = () => {};
            ctx.notify(acp.methods.agent.session.cancel, { sessionId: session });
          }
          if (step.exit_on && u.sessionUpdate === step.exit_on) {
            out({ type: "exiting" });
            process.exit(0);
          }
        };
        const pending = ctx.request(acp.methods.agent.session.prompt, {
          sessionId: session,
          prompt: [{ type: "text", text: step.text }],
        });
        if (step.cancel_on === "sent") {
          ctx.notify(acp.methods.agent.session.cancel, { sessionId: session });
        }
        const r = await pending;
        onUpdate = () => {};
        out({ type: "result", op: "prompt", result: r });
      }
    } catch (e) {
      out({ type: "error", op: step.op, error: { code: e.code, message: e.message, data: e.data } });
    }
  }
});
agent.stdin.end();
