/*
 * C++ allocations through Debian's libstdc++ (built without frame
 * pointers), for the --unwind tests.  Built with g++ -O2 -g
 * -fomit-frame-pointer (see the Makefile): no frame in this program or in
 * libstdc++ keeps a frame pointer, so only a CFI (DWARF) unwinder gets the
 * stacks above operator new right.
 *
 *   shop::Widget::make     1000 x new Widget (88 bytes); shop::Widget::destroy
 *                          deletes 250 of them: 750 in use at exit
 *   shop::make_label       20 x new char[3000]; main deletes 8: 12 in use.
 *                          libstdc++'s operator new[] is a jump to operator
 *                          new, so it is no frame (in gdb either)
 *   shop::Order::place     100 x new (std::nothrow) Order (56 bytes), kept.
 *                          The nothrow operator new calls operator new: two
 *                          libstdc++ frames, both named "operator new"
 *   main                   1 x new Ledger (24 bytes: one std::vector), kept
 *   shop::Ledger::fill     1000 x push_back of a long into the ledger's empty
 *                          vector: 11 buffers of 8 x 1, 2, 4, ... 1024 bytes
 *                          (16376 bytes), the last (8192) in use at exit
 *
 * No iostream or stdio: the only other heap activity is libstdc++'s own
 * emergency exception pool, allocated by a constructor of libstdc++ before
 * main (not under main).  tests/run.sh (scenario_unwind) holds the expected
 * numbers.
 */
#include <cstddef>
#include <new>
#include <vector>

#define NOINLINE __attribute__((noinline))

namespace shop {

class Widget {
public:
	static Widget *make(long id) NOINLINE;
	static void destroy(Widget *w) NOINLINE;

private:
	explicit Widget(long id) : id_(id) { name_[0] = '\0'; }
	long id_;
	char name_[80];
};
static_assert(sizeof(Widget) == 88, "Widget is 88 bytes");

Widget *Widget::make(long id)
{
	return new Widget(id);
}

void Widget::destroy(Widget *w)
{
	delete w;
}

/* Not a tail call of operator new[]: the label is initialised first. */
NOINLINE char *make_label(std::size_t n)
{
	char *p = new char[n];
	p[0] = '\0';
	return p;
}

struct Order {
	static Order *place(long qty) NOINLINE;
	long qty;
	long items[6];
};
static_assert(sizeof(Order) == 56, "Order is 56 bytes");

Order *Order::place(long qty)
{
	Order *o = new (std::nothrow) Order;
	if (o)
		o->qty = qty;
	return o;
}

class Ledger {
public:
	void fill(long n) NOINLINE;

private:
	std::vector<long> items_;
};
static_assert(sizeof(Ledger) == 24, "Ledger is one std::vector: 24 bytes");

void Ledger::fill(long n)
{
	for (long i = 0; i < n; i++)
		items_.push_back(i);
}

} // namespace shop

/* Volatile sinks: the compiler cannot drop the allocations. */
shop::Widget *volatile shelf[1000];
char *volatile labels[20];
shop::Order *volatile orders[100];
shop::Ledger *volatile ledger;

int main()
{
	for (long i = 0; i < 1000; i++)
		shelf[i] = shop::Widget::make(i);
	for (int i = 0; i < 1000; i += 4)
		shop::Widget::destroy(shelf[i]);
	for (int i = 0; i < 20; i++)
		labels[i] = shop::make_label(3000);
	for (int i = 0; i < 8; i++)
		delete[] labels[i];
	for (long i = 0; i < 100; i++)
		if (!(orders[i] = shop::Order::place(i)))
			return 1;
	ledger = new shop::Ledger;
	ledger->fill(1000);
	return 0;
}
