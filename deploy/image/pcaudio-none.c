// libpcaudio.so.0 without an audio device, for the container image (Dockerfile, stage espeak).
//
// Debian's libespeak-ng1 links libpcaudio0, whose ALSA and PulseAudio outputs bring about
// 9 MB of libraries (PulseAudio, ALSA, libsndfile, D-Bus, X11 client libraries) into the image.
// The service only ever has espeak-ng write a WAV file (-w), a mode in which espeak-ng opens no
// audio device, so this library answers every call as a machine without a sound card would:
// there is no device. espeak-ng asked to play aloud reports this error instead of
// speaking. The signatures are pcaudiolib's (pcaudiolib/audio.h, version 1.2).
#include <stddef.h>
#include <stdint.h>

struct audio_object;

struct audio_object *create_audio_device_object(const char *device, const char *application_name,
                                                const char *description) {
	(void)device, (void)application_name, (void)description;
	return NULL;
}

int audio_object_open(struct audio_object *object, int format, uint32_t rate, uint8_t channels) {
	(void)object, (void)format, (void)rate, (void)channels;
	return -1;
}

void audio_object_close(struct audio_object *object) { (void)object; }

void audio_object_destroy(struct audio_object *object) { (void)object; }

int audio_object_write(struct audio_object *object, const void *data, size_t bytes) {
	(void)object, (void)data, (void)bytes;
	return -1;
}

int audio_object_drain(struct audio_object *object) {
	(void)object;
	return -1;
}

int audio_object_flush(struct audio_object *object) {
	(void)object;
	return -1;
}

const char *audio_object_strerror(struct audio_object *object, int error) {
	(void)object, (void)error;
	return "no audio device (mediagen's image speaks only into files)";
}
