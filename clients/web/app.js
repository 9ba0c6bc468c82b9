// Browser demo for the realtime TTS server: speaks the protocol of docs/protocol.md over
// one WebSocket, plays audio through an AudioWorklet (worklet.js) as it arrives, and
// exposes its state on window.demo for tests. Format "auto" asks for Opus and decodes it
// with WebCodecs' AudioDecoder (decode.js) where the browser has one and the server offers
// it, and falls back to 16-bit PCM otherwise. With "word timings" on, the transcript
// highlights each word as it plays (words.js). Between utterances the page pings before
// the server's idle timeout; after an idle close, the next Speak connects again.
"use strict";

const HEADER_SIZE = 12;
const FLAG_SEGMENT_END = 1;
const PREBUFFER_MS = 80;     // jitter buffer before playback starts
const TOKEN_INTERVAL_MS = 45; // "type like an LLM" pace
const KEEPALIVE_SHARE = 0.4;  // ping after this share of hello.limits.idle_timeout_s

const $ = (id) => document.getElementById(id);

const demo = {
  status: "connecting",   // connecting | ready | speaking | done | cancelled | error | closed
  hello: null,
  weightsWarning: false,
  utteranceId: null,
  stream: null,
  framesReceived: 0,
  samplesReceived: 0,
  samplesPlayed: 0,
  bufferedSamples: 0,
  underruns: 0,
  firstAudioMs: null,
  audioMs: null,          // from `done`
  rtf: null,
  done: null,
  cancelledIds: [],
  framesAfterCancel: 0,
  errors: [],
  audioClock: 0,
  sampleRate: 24000,
  format: "pcm_s16le",
  codec: null,            // what "auto" chose: "opus" (WebCodecs) or "pcm_s16le"
  lastSeq: -1,
  words: [],              // word timings received: {word, original, start_ms, end_ms, segment}
  highlights: [],         // {index, at_ms}: when each word was first highlighted
  currentWord: null,      // the word playing now
  spoken: [],             // each segment's text as the model read it
  unspoken: [],           // sentences the server could not speak (done.unspoken)
  pings: 0,
  connections: 0,
};
window.demo = demo;

let ws = null;
let audioCtx = null;
let player = null;
let utteranceCount = 0;
let sentAt = 0;
let typing = null;        // timer of the "type like an LLM" mode
let inputFinal = true;
let lastSentAt = 0;       // performance.now() of the last message sent
let idleClosed = false;   // the server closed the socket as idle: Speak reconnects
let helloWaiter = null;   // resolves when the (re)connection's hello came
const closedIds = new Set();       // utterances that got done/cancelled/error
const cancelRequested = new Set(); // utterances the user stopped
const streamIds = new Map();       // stream number -> utterance id
const recent = new Float32Array(4096); // last samples received, for the waveform
let recentPos = 0;

function log(line) {
  const el = $("log");
  el.textContent = `${new Date().toISOString().slice(11, 23)} ${line}\n` + el.textContent.slice(0, 4000);
}

function setStatus(status, detail) {
  demo.status = status;
  $("status").textContent = detail ? `${status}: ${detail}` : status;
  const busy = status === "speaking";
  $("stop").disabled = !busy;
  $("speak").disabled = !(idleClosed || (ws && ws.readyState === WebSocket.OPEN));
}

function wsUrl() {
  const page = new URL(location.href);
  const url = new URL("/v1/stream", page);
  url.protocol = page.protocol === "https:" ? "wss:" : "ws:";
  const token = page.searchParams.get("token");
  if (token) url.searchParams.set("token", token); // browsers cannot set an Authorization header
  return url.toString();
}

// ---- connection --------------------------------------------------------------------

function connect() {
  ws = new WebSocket(wsUrl());
  ws.binaryType = "arraybuffer";
  demo.connections += 1;
  ws.onopen = () => log("connected");
  ws.onclose = (e) => {
    idleClosed = e.code === 1000;  // an idle close: the next Speak connects again
    $("conn").textContent = idleClosed ? "idle (reconnects on Speak)" : `closed (${e.code})`;
    $("conn").className = idleClosed ? "pill" : "pill bad";
    stopTyping();
    setStatus("closed", e.reason || String(e.code));
  };
  ws.onmessage = (e) => {
    if (typeof e.data === "string") onText(JSON.parse(e.data));
    else onAudio(e.data);
  };
}

function send(msg) {
  ws.send(JSON.stringify(msg));
  lastSentAt = performance.now();
}

function reconnect() {
  idleClosed = false;
  const ready = new Promise((resolve) => { helloWaiter = resolve; });
  connect();
  return ready;
}

function keepalive() {
  // The server closes a connection with no active utterance and no message for its
  // idle timeout: ping before that while idle.
  const timeout = demo.hello && demo.hello.limits && demo.hello.limits.idle_timeout_s;
  if (!timeout || !ws || ws.readyState !== WebSocket.OPEN || demo.status === "speaking") return;
  if (performance.now() - lastSentAt >= KEEPALIVE_SHARE * timeout * 1000) {
    send({type: "ping"});
    demo.pings += 1;
  }
}

async function onHello(hello) {
  demo.hello = hello;
  demo.sampleRate = hello.sample_rate;
  $("conn").textContent = "connected";
  $("conn").className = "pill ok";
  const m = hello.model || {};
  $("model").textContent = `${m.name || "?"} · ${m.weights || "?"} weights · ${m.device || "?"}`;
  if (m.weights !== "checkpoint") {
    demo.weightsWarning = true;
    $("weights-kind").textContent = m.weights;
    $("weights-warning").hidden = false;
  }
  const voice = $("voice");
  while (voice.options.length > 1) voice.remove(1);  // a reconnection lists them again
  for (const name of hello.voices || []) voice.add(new Option(name, name));
  const format = $("format");
  format.innerHTML = "";
  const formats = hello.formats || ["pcm_s16le"];
  const opus = formats.includes("opus") && await webCodecsOpus(demo.sampleRate);
  demo.codec = opus ? "opus" : "pcm_s16le";
  format.add(new Option(`auto (${opus ? "opus, WebCodecs" : "pcm_s16le"})`, "auto"));
  for (const f of formats) {
    if (f !== "opus" || opus) format.add(new Option(f, f));
  }
  lastSentAt = performance.now();
  setStatus("ready");
  if (helloWaiter) helloWaiter();
  helloWaiter = null;
}

function onText(msg) {
  switch (msg.type) {
    case "hello": onHello(msg).catch((e) => log(`hello: ${e}`)); break;
    case "started":
      streamIds.set(msg.stream, msg.id);
      if (msg.id === demo.utteranceId) {
        demo.stream = msg.stream;
        demo.format = msg.format;
        if (msg.format === "opus") startOpus(msg.id, msg.pre_skip);
      }
      break;
    case "segment":
      log(`segment ${msg.index}: ${msg.audio_ms.toFixed(1)} ms "${msg.text}"`
          + (msg.spoken && msg.spoken !== msg.text ? ` read as "${msg.spoken}"` : ""));
      if (msg.id === demo.utteranceId) onSegmentText(msg);
      break;
    case "words":
      if (msg.id === demo.utteranceId && !cancelRequested.has(msg.id)) onWords(msg);
      break;
    case "done":
      if (msg.id !== demo.utteranceId) break;
      closedIds.add(msg.id);
      stopTyping();
      finishOpus(msg.id).then(() => {
        if (msg.id !== demo.utteranceId) return;
        demo.done = msg;
        demo.audioMs = msg.audio_ms;
        onUnspoken(msg.unspoken);
        demo.rtf = msg.timing.rtf;
        $("rtf").textContent = msg.timing.rtf.toFixed(3);
        player && player.port.postMessage({type: "end"});
        setStatus("done", `${(msg.audio_ms / 1000).toFixed(2)} s of audio`);
      });
      break;
    case "cancelled":
      closedIds.add(msg.id);
      demo.cancelledIds.push(msg.id);
      if (msg.id === demo.utteranceId) setStatus("cancelled");
      break;
    case "error":
      demo.errors.push(msg);
      log(`error ${msg.code}: ${msg.message}`);
      if (msg.id && msg.id === demo.utteranceId &&
          msg.code !== "duplicate_id" && msg.code !== "input_closed") {
        closedIds.add(msg.id);
        stopTyping();
        player && player.port.postMessage({type: "end"});
        setStatus("error", msg.code);
      }
      break;
  }
}

// ---- audio -------------------------------------------------------------------------

function onAudio(buf) {
  const view = new DataView(buf);
  const flags = view.getUint8(1);
  const stream = view.getUint32(4, true);
  const seq = view.getUint32(8, true);
  const id = streamIds.get(stream);
  if (id !== undefined && closedIds.has(id)) {
    if (demo.cancelledIds.includes(id)) demo.framesAfterCancel += 1; // must stay 0
    return;
  }
  if (stream !== demo.stream || cancelRequested.has(id)) return; // stopped: drop in-flight audio
  if (seq !== demo.lastSeq + 1) log(`seq gap: ${demo.lastSeq} -> ${seq}`);
  demo.lastSeq = seq;
  if (demo.framesReceived === 0) {
    demo.firstAudioMs = performance.now() - sentAt;
    $("first-audio").textContent = `${demo.firstAudioMs.toFixed(0)} ms`;
  }
  demo.framesReceived += 1;
  $("frames").textContent = String(demo.framesReceived);
  if (flags & FLAG_SEGMENT_END) log(`segment end (frame ${seq})`);
  if (demo.format === "opus") decodeOpus(buf); // its samples come to play() when decoded
  else play(decodePayload(buf, demo.format));
}

function play(samples) {
  demo.samplesReceived += samples.length;
  for (let i = 0; i < samples.length; i++) {
    recent[recentPos] = samples[i];
    recentPos = (recentPos + 1) % recent.length;
  }
  if (player) {
    player.port.postMessage({type: "push", samples}, [samples.buffer]);
  }
}

async function ensureAudio() {
  if (audioCtx) {
    if (audioCtx.state !== "running") await audioCtx.resume();
    return;
  }
  audioCtx = new AudioContext({sampleRate: demo.sampleRate});
  await audioCtx.audioWorklet.addModule("worklet.js");
  player = new AudioWorkletNode(audioCtx, "jitter-player", {outputChannelCount: [1]});
  player.connect(audioCtx.destination);
  player.port.onmessage = (e) => {
    const s = e.data;
    demo.samplesPlayed = s.played;
    demo.bufferedSamples = s.buffered;
    demo.underruns = s.underruns;
  };
  if (audioCtx.state !== "running") await audioCtx.resume();
}

// ---- controls ----------------------------------------------------------------------

function resetStats() {
  Object.assign(demo, {framesReceived: 0, samplesReceived: 0, samplesPlayed: 0,
                       bufferedSamples: 0, underruns: 0, firstAudioMs: null, audioMs: null,
                       rtf: null, done: null, stream: null, lastSeq: -1});
  $("first-audio").textContent = "…";
  $("rtf").textContent = "…";
  resetTranscript();
}

function llmTokens(text) {
  // Words with their trailing whitespace, long words split: roughly an LLM's tokens.
  const out = [];
  for (const word of text.match(/\S+\s*/g) || []) {
    for (let i = 0; i < word.length; i += 6) out.push(word.slice(i, i + 6));
  }
  return out;
}

function stopTyping() {
  if (typing) clearInterval(typing);
  typing = null;
}

async function speak() {
  const text = $("text").value;
  if (!text.trim()) return;
  if (demo.status === "speaking") await stop();
  if (idleClosed) await reconnect();
  await ensureAudio();
  resetStats();
  const id = `web-${Date.now().toString(36)}-${++utteranceCount}`;
  demo.utteranceId = id;
  stopOpus();
  demo.format = $("format").value === "auto" ? demo.codec : $("format").value;
  const llm = $("llm-mode").checked;
  const tokens = llm ? llmTokens(text) : null;
  const msg = {
    type: "speak", id, text: llm ? tokens.shift() : text, final: !llm,
    lane: $("lane").value, chunking: $("chunking").value, format: demo.format,
    sample_rate: demo.sampleRate, timestamps: $("timestamps").checked,
  };
  if ($("voice").value) msg.voice = $("voice").value;
  const params = {};
  if ($("seed").value !== "") params.seed = parseInt($("seed").value, 10);
  if ($("speed").value !== "5") params.speed = parseInt($("speed").value, 10);
  const refine = $("refine").value;  // "": no pass; "true": upstream's default prompt
  if (refine) params.refine = refine === "true" ? true : refine;
  if (Object.keys(params).length) msg.params = params;
  player.port.postMessage({type: "start", prebuffer: Math.round(demo.sampleRate * PREBUFFER_MS / 1000)});
  sentAt = performance.now();
  send(msg);
  inputFinal = msg.final;
  setStatus("speaking");
  $("typed").hidden = !llm;
  if (llm) {
    $("typed").textContent = msg.text;
    typing = setInterval(() => {
      if (demo.utteranceId !== id || demo.status !== "speaking") return stopTyping();
      const token = tokens.shift();
      if (token === undefined) {
        send({type: "append", id, text: "", final: true});
        inputFinal = true;
        return stopTyping();
      }
      $("typed").textContent += token;
      send({type: "append", id, text: token, final: false});
    }, TOKEN_INTERVAL_MS);
  }
}

async function stop() {
  stopTyping();
  const id = demo.utteranceId;
  if (!id || closedIds.has(id)) return;
  player && player.port.postMessage({type: "clear"});  // silence now, before the reply
  cancelRequested.add(id);
  stopOpus();  // decodes still in flight are dropped
  send({type: "cancel", id});
  setStatus("cancelled", "stopping");
}

function drawWave() {
  const canvas = $("wave");
  const g = canvas.getContext("2d");
  g.clearRect(0, 0, canvas.width, canvas.height);
  g.strokeStyle = "#60a5fa";
  g.beginPath();
  const mid = canvas.height / 2;
  for (let x = 0; x < canvas.width; x++) {
    const i = (recentPos + Math.floor(x * recent.length / canvas.width)) % recent.length;
    const y = mid - recent[i] * mid * 0.95;
    x === 0 ? g.moveTo(x, y) : g.lineTo(x, y);
  }
  g.stroke();
  if (audioCtx) demo.audioClock = audioCtx.currentTime;
  const bufMs = 1000 * demo.bufferedSamples / demo.sampleRate;
  $("buffer").textContent = `${bufMs.toFixed(0)} ms`;
  $("played").textContent = `${(demo.samplesPlayed / demo.sampleRate).toFixed(2)} s`;
  $("underruns").textContent = String(demo.underruns);
  highlightWords(1000 * demo.samplesPlayed / demo.sampleRate);
  if (demo.status === "speaking" && demo.framesReceived > 0 && demo.rtf === null) {
    const elapsed = performance.now() - sentAt;
    const audio = 1000 * demo.samplesReceived / demo.sampleRate;
    $("rtf").textContent = `${(elapsed / audio).toFixed(3)} (live)`;
  }
  requestAnimationFrame(drawWave);
}

$("speak").addEventListener("click", () => { speak().catch((e) => log(`speak failed: ${e}`)); });
$("stop").addEventListener("click", () => { stop(); });
$("speed").addEventListener("input", () => { $("speed-value").textContent = $("speed").value; });
connect();
setInterval(keepalive, 500);
requestAnimationFrame(drawWave);
