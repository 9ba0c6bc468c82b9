// AudioWorklet player: a FIFO of sample chunks with a small jitter buffer.
//
// Messages in:  {type: "push", samples: Float32Array}  queue audio
//               {type: "start", prebuffer: n}           new utterance: wait for n samples
//               {type: "end"}                           no more audio: play what is left
//               {type: "clear"}                         barge-in: drop everything now
// Messages out: {type: "stats", played, buffered, underruns, playing} every ~40 ms
//
// `played` counts only real samples written to the output, never the silence used
// while buffering, so it matches the audio the server sent.
class JitterPlayer extends AudioWorkletProcessor {
  constructor() {
    super();
    this.chunks = [];
    this.offset = 0;       // read position inside chunks[0]
    this.buffered = 0;     // samples queued and not yet played
    this.played = 0;
    this.underruns = 0;
    this.prebuffer = 0;
    this.playing = false;  // false while filling the jitter buffer
    this.ended = true;
    this.sinceReport = 0;
    this.port.onmessage = (e) => this.onMessage(e.data);
  }

  onMessage(msg) {
    if (msg.type === "push") {
      this.chunks.push(msg.samples);
      this.buffered += msg.samples.length;
    } else if (msg.type === "start") {
      this.clear();
      this.prebuffer = msg.prebuffer | 0;
      this.played = 0;
      this.underruns = 0;
      this.ended = false;
    } else if (msg.type === "end") {
      this.ended = true;
    } else if (msg.type === "clear") {
      this.clear();
      this.ended = true;
    }
  }

  clear() {
    this.chunks = [];
    this.offset = 0;
    this.buffered = 0;
    this.playing = false;
  }

  process(inputs, outputs) {
    const out = outputs[0][0];
    let written = 0;
    if (!this.playing && (this.buffered >= this.prebuffer || (this.ended && this.buffered > 0))) {
      this.playing = true;
    }
    if (this.playing) {
      while (written < out.length && this.chunks.length > 0) {
        const head = this.chunks[0];
        const n = Math.min(out.length - written, head.length - this.offset);
        out.set(head.subarray(this.offset, this.offset + n), written);
        written += n;
        this.offset += n;
        if (this.offset >= head.length) {
          this.chunks.shift();
          this.offset = 0;
        }
      }
      this.buffered -= written;
      this.played += written;
      if (this.buffered === 0) {
        // Ran dry: an underrun unless the utterance is over. Refill before resuming.
        if (!this.ended) this.underruns += 1;
        this.playing = false;
      }
    }
    out.fill(0, written);
    for (let ch = 1; ch < outputs[0].length; ch++) outputs[0][ch].set(out);
    this.sinceReport += out.length;
    if (this.sinceReport >= sampleRate / 25) {
      this.sinceReport = 0;
      this.port.postMessage({type: "stats", played: this.played, buffered: this.buffered,
                             underruns: this.underruns, playing: this.playing});
    }
    return true;
  }
}

registerProcessor("jitter-player", JitterPlayer);
