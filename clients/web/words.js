// Word timings for the demo page (app.js): the utterance's text as the model reads it,
// each word highlighted while it plays, and the sentences the server could not speak.
// A `words` message (speak with timestamps: true) gives each word's start_ms/end_ms on
// the utterance's audio clock; the player reports how many samples it has played, so a
// word is highlighted from the moment its first sample plays, never before. Loaded
// before app.js, whose globals ($, demo, log) it uses when called.
"use strict";

const transcript = {
  words: [],   // {start_ms, end_ms, el, state: "" | "current" | "played"}
};

function resetTranscript() {
  transcript.words = [];
  $("transcript").textContent = "";
  $("unspoken").textContent = "";
  $("unspoken").hidden = true;
  Object.assign(demo, {words: [], highlights: [], currentWord: null, spoken: [], unspoken: []});
}

function onWords(msg) {
  const box = $("transcript");
  for (const w of msg.words) {
    const el = document.createElement("span");
    el.className = "word";
    el.textContent = w.word;
    if (w.original !== undefined && w.original !== w.word) el.title = `from "${w.original}"`;
    box.append(el, " ");
    transcript.words.push({start_ms: w.start_ms, end_ms: w.end_ms, el, state: ""});
    demo.words.push({word: w.word, original: w.original, start_ms: w.start_ms,
                     end_ms: w.end_ms, segment: msg.segment});
  }
}

function onSegmentText(msg) {
  // `spoken` (the text as the model read it) where the server reports it.
  const spoken = msg.spoken !== undefined ? msg.spoken : msg.text;
  demo.spoken.push(spoken);
  if (spoken !== msg.text) log(`segment ${msg.index} read as: "${spoken}"`);
  if (!transcript.words.length) $("transcript").textContent += `${spoken} `;
}

function onUnspoken(sentences) {
  if (!sentences || !sentences.length) return;
  demo.unspoken = sentences.slice();
  const box = $("unspoken");
  box.textContent = `Not spoken (nothing to read): ${sentences.map((s) => `"${s}"`).join(", ")}`;
  box.hidden = false;
}

// Every animation frame: `playedMs` of the current utterance's audio have played.
function highlightWords(playedMs) {
  let current = null;
  transcript.words.forEach((w, index) => {
    const state = playedMs < w.start_ms ? "" : playedMs < w.end_ms ? "current" : "played";
    if (state === "current") current = w.el.textContent;
    if (state === w.state) return;
    if (w.state === "") demo.highlights.push({index, at_ms: playedMs});
    w.state = state;
    w.el.className = state ? `word ${state}` : "word";
  });
  demo.currentWord = current;
}
