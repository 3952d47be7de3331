import sys

from inductionlab.cli import main

sys.exit(main())
