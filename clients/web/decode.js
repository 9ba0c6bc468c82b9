// Decoding the wire's audio for the demo page (app.js): the PCM formats to float
// samples, and Opus packets with WebCodecs' AudioDecoder (one decoder per utterance, the
// pre-skip dropped). Loaded before app.js, whose globals (demo, play, log,
// cancelRequested, HEADER_SIZE) it uses when called.
"use strict";

const MULAW = (() => {
  const table = new Float32Array(256);
  for (let i = 0; i < 256; i++) {
    const u = ~i & 0xff;
    const sign = u & 0x80, exponent = (u >> 4) & 0x07, mantissa = u & 0x0f;
    const magnitude = (((mantissa << 3) + 0x84) << exponent) - 0x84;
    table[i] = (sign ? -magnitude : magnitude) / 32768;
  }
  return table;
})();

function decodePayload(buf, format) {
  if (format === "pcm_f32le") return new Float32Array(buf.slice(HEADER_SIZE));
  if (format === "pcm_mulaw") {
    const bytes = new Uint8Array(buf, HEADER_SIZE);
    const out = new Float32Array(bytes.length);
    for (let i = 0; i < bytes.length; i++) out[i] = MULAW[bytes[i]];
    return out;
  }
  const pcm = new Int16Array(buf, HEADER_SIZE, (buf.byteLength - HEADER_SIZE) >> 1);
  const out = new Float32Array(pcm.length);
  for (let i = 0; i < pcm.length; i++) out[i] = pcm[i] / 32768;
  return out;
}

const OPUS_PACKET_US = 20000;
let opusDecoder = null;
let opusSkip = 0;         // samples still to drop at the start (the encoder's pre-skip)
let opusTimestamp = 0;
let opusOwner = null;     // the utterance the decoder belongs to

async function webCodecsOpus(sampleRate) {
  if (typeof AudioDecoder === "undefined") return false;
  try {
    const probe = await AudioDecoder.isConfigSupported({codec: "opus", sampleRate, numberOfChannels: 1});
    return probe.supported === true;
  } catch (e) {
    return false;
  }
}

function startOpus(id, preSkip) {
  stopOpus();
  opusOwner = id;
  opusSkip = Math.round((preSkip || 0) * demo.sampleRate / 48000);
  opusTimestamp = 0;
  opusDecoder = new AudioDecoder({
    output: (data) => onDecoded(id, data),
    error: (e) => log(`opus decoder: ${e.message}`),
  });
  opusDecoder.configure({codec: "opus", sampleRate: demo.sampleRate, numberOfChannels: 1});
}

function stopOpus() {
  if (opusDecoder && opusDecoder.state !== "closed") opusDecoder.close();
  opusDecoder = null;
  opusOwner = null;
}

function decodeOpus(buf) {
  // The payload: packets, each after its byte length (u16 little-endian).
  const view = new DataView(buf);
  for (let at = HEADER_SIZE; at + 2 <= buf.byteLength;) {
    const size = view.getUint16(at, true);
    at += 2;
    opusDecoder.decode(new EncodedAudioChunk({type: "key", timestamp: opusTimestamp,
                                              data: new Uint8Array(buf, at, size)}));
    opusTimestamp += OPUS_PACKET_US;
    at += size;
  }
}

function onDecoded(id, data) {
  const raw = new Float32Array(data.numberOfFrames);
  data.copyTo(raw, {planeIndex: 0, format: "f32-planar"});
  const rate = data.sampleRate;
  data.close();
  if (id !== opusOwner || cancelRequested.has(id)) return; // stopped: drop what was in flight
  let samples = rate === demo.sampleRate ? raw : resample(raw, rate, demo.sampleRate);
  if (opusSkip > 0) {
    const dropped = Math.min(opusSkip, samples.length);
    samples = samples.slice(dropped);
    opusSkip -= dropped;
  }
  if (samples.length) play(samples);
}

function resample(input, from, to) {
  // Linear interpolation: only for a browser that decodes at another rate than asked.
  const out = new Float32Array(Math.round(input.length * to / from));
  for (let i = 0; i < out.length; i++) {
    const x = i * from / to, k = Math.floor(x), f = x - k;
    out[i] = (input[k] || 0) * (1 - f) + (input[k + 1] || 0) * f;
  }
  return out;
}

async function finishOpus(id) {
  // Outputs of the last packets come after `done`: wait for them before ending playback.
  if (opusDecoder && opusOwner === id && opusDecoder.state === "configured") {
    try { await opusDecoder.flush(); } catch (e) { log(`opus flush: ${e.message}`); }
  }
}

