/* TEMPORARY until guest_reply_status lands */
static inline int
guest_reply_status(struct guest_call *c, int status, const char *text)
{
	if (status == -ECANCELED)
		return guest_reply_cancelled(c);
	return guest_reply_error(c, text != NULL ? text : "error");
}
