/*
 * t_wrapfree's code and numbers, from a shared library (libt_wrapfree.so,
 * t_wrapfree.c built with -DWRAP_SO): mapped near libc's malloc family, so
 * that one stub reaches both, and the wrappers' frees (obj_del calling
 * free, obj_del_tail jumping to it) go through the event ring with the
 * malloc family's (tests/scenarios/custom.sh, custom_wrapring).
 */
int wrapfree_main(void);

int main(void)
{
	return wrapfree_main();
}
