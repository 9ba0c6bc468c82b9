// A voice from a recording: the page uploads a 3-30 s audio file (or one recorded with the
// microphone, where the browser offers MediaRecorder) and its transcript to POST /v1/voices
// (docs/protocol.md), adds the returned voice to the Voice menu and selects it, so the next
// Speak uses it. State for tests: window.voiceUpload.
"use strict";

(() => {
  const $ = (id) => document.getElementById(id);
  const RECORD_MS = 30000;  // the server takes at most 30 s
  const state = window.voiceUpload = {status: "idle", voice: null, name: null, error: null};
  let recorder = null;

  function show(status, text) {
    state.status = status;
    $("voice-status").textContent = text;
  }

  async function upload(blob, filename) {
    const transcript = $("voice-transcript").value.trim();
    if (!transcript) { show("error", "type what the recording says first"); return; }
    const form = new FormData();
    form.append("audio", blob, filename);
    form.append("transcript", transcript);
    const name = $("voice-name").value.trim();
    if (name) form.append("name", name);
    const headers = {};
    const token = new URLSearchParams(location.search).get("token");
    if (token) headers.Authorization = `Bearer ${token}`;
    show("uploading", "encoding the voice…");
    try {
      const resp = await fetch("/v1/voices", {method: "POST", body: form, headers});
      const body = await resp.json();
      if (!resp.ok) {
        state.error = body.error ? body.error.message : `HTTP ${resp.status}`;
        show("error", state.error);
        return;
      }
      state.voice = body.voice;
      state.name = body.name || null;
      const label = body.name || `recording: ${transcript.slice(0, 24)}`;
      const menu = $("voice");
      menu.add(new Option(label, body.voice));
      menu.value = body.voice;
      show("ready", `voice ready (${label})`);
    } catch (e) {
      state.error = String(e);
      show("error", `upload failed: ${e}`);
    }
  }

  $("voice-file").addEventListener("change", () => {
    const file = $("voice-file").files[0];
    if (file) upload(file, file.name);
  });

  const canRecord = !!(navigator.mediaDevices && window.MediaRecorder);
  $("voice-record").hidden = !canRecord;
  $("voice-record").addEventListener("click", async () => {
    if (recorder) { recorder.stop(); return; }
    let stream;
    try {
      stream = await navigator.mediaDevices.getUserMedia({audio: true});
    } catch (e) {
      show("error", `no microphone: ${e.message || e}`);
      return;
    }
    const chunks = [];
    recorder = new MediaRecorder(stream);
    recorder.ondataavailable = (e) => { if (e.data.size) chunks.push(e.data); };
    recorder.onstop = () => {
      stream.getTracks().forEach((t) => t.stop());
      const type = recorder.mimeType || "audio/webm";
      recorder = null;
      $("voice-record").textContent = "Record";
      upload(new Blob(chunks, {type}), type.includes("ogg") ? "recording.ogg" : "recording.webm");
    };
    recorder.start();
    $("voice-record").textContent = "Stop recording";
    show("recording", "recording (3-30 s), read the transcript aloud…");
    setTimeout(() => { if (recorder) recorder.stop(); }, RECORD_MS);
  });
})();
