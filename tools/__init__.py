"""Developer tools that are not shipped: the GPU check and upstream ChatTTS as a reference."""
