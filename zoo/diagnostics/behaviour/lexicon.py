"""Small word lists the behaviour tests fill their templates from (written for this package).

Words are common in SNLI's image captions, so that a model trained on SNLI knows them: a failure then says
something about the model's reasoning, not about unknown words. Nouns are singular unless a list pairs
them with a plural.
"""

# (singular, plural) people; every one can be the subject of an activity below.
PEOPLE = (("man", "men"), ("woman", "women"), ("boy", "boys"), ("girl", "girls"), ("child", "children"),
          ("worker", "workers"), ("teenager", "teenagers"), ("student", "students"), ("musician", "musicians"),
          ("tourist", "tourists"), ("dancer", "dancers"), ("police officer", "police officers"))

# Activities as "-ing" verb phrases, none implying another or a place.
ACTIVITIES = ("reading a book", "riding a bicycle", "eating an apple", "painting a fence", "washing a car",
              "carrying a box", "playing soccer", "climbing a rock", "cooking dinner", "drinking coffee",
              "writing a letter", "pushing a cart", "singing a song", "sweeping the floor", "selling flowers",
              "playing a guitar", "walking a dog", "fixing a bike", "throwing a ball", "taking a photo")

# Places, as prepositional phrases.
PLACES = ("in a park", "on a beach", "in a kitchen", "on a busy street", "in front of a store", "near a river",
          "in a garden", "at a train station", "inside a library", "on a bridge", "in a parking lot",
          "next to a fountain")

# Adjective antonyms with nouns they describe, the verb that takes those nouns and whether the nouns take
# an article ("drinking hot tea", not "drinking a hot tea").
ANTONYM_OBJECTS = (
    (("big", "small"), ("box", "bag", "dog", "suitcase"), "carrying", True),
    (("full", "empty"), ("glass", "bottle", "cup", "bucket"), "holding", True),
    (("old", "new"), ("car", "bicycle", "truck"), "washing", True),
    (("clean", "dirty"), ("shirt", "towel", "jacket"), "wearing", True),
    (("long", "short"), ("dress", "coat", "skirt"), "wearing", True),
    (("hot", "cold"), ("soup", "tea", "coffee"), "drinking", False),
    (("open", "closed"), ("door", "window", "gate"), "standing next to", True),
    (("wet", "dry"), ("towel", "shirt", "blanket"), "holding", True),
)
# Antonym states of a person: "The man is happy." / "The man is sad."
ANTONYM_STATES = (("happy", "sad"), ("awake", "asleep"), ("tall", "short"), ("young", "old"), ("wet", "dry"),
                  ("inside", "outside"), ("standing", "sitting"), ("laughing", "crying"), ("early", "late"))

# Frames with a hyponym slot `{thing}` ("a guitar"), the hyponyms, and the hypernym phrase that replaces it.
HYPERNYM_FRAMES = (
    ("{subject} is playing {thing} {place}.", ("guitar", "violin", "piano", "drum", "trumpet", "flute"),
     "an instrument"),
    ("{subject} is eating {thing} {place}.", ("banana", "apple", "pear", "peach", "orange"), "a piece of fruit"),
    ("{subject} is riding {thing} {place}.", ("horse", "camel", "donkey", "pony"), "an animal"),
    ("{subject} is driving {thing} {place}.", ("truck", "bus", "van", "tractor", "taxi"), "a vehicle"),
    ("{subject} is holding {thing} {place}.", ("puppy", "kitten", "rabbit", "parrot", "hamster"), "an animal"),
)
# Subjects and their hypernyms: "A girl is singing a song." -> "A person is singing a song."
PERSON_HYPERNYMS = (("man", "person"), ("woman", "person"), ("boy", "child"), ("girl", "child"),
                    ("boy", "person"), ("girl", "person"), ("teenager", "person"), ("dancer", "person"))
ANIMAL_HYPERNYMS = (("dog", "animal"), ("cat", "animal"), ("horse", "animal"), ("cow", "animal"),
                    ("goat", "animal"), ("sheep", "animal"))
ANIMAL_ACTIVITIES = ("running across a field", "sleeping in the sun", "jumping over a log", "drinking water",
                     "lying in the grass", "standing in the snow")

# Activities a group (or one person) does: "Three women are waiting for a bus."
GROUP_ACTIVITIES = ("playing soccer", "waiting for a bus", "sitting on a bench", "eating lunch", "dancing",
                    "singing", "walking", "standing in line", "drinking coffee", "watching a parade")

NUMBER_WORDS = ("one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")
# Conjoined people for counting: "A man, a woman and a boy" -> "Three people".
COUNT_PEOPLE = ("man", "woman", "boy", "girl", "child", "teenager", "police officer", "musician")

# (agent/patient nouns, transitive "-ing" verb): "The dog is chasing the cat."; no verb is symmetric.
SWAP_NOUNS = (("dog", "cat"), ("man", "woman"), ("boy", "girl"), ("teacher", "student"), ("horse", "cow"),
              ("child", "clown"), ("police officer", "thief"), ("mother", "baby"), ("doctor", "nurse"))
SWAP_VERBS = ("chasing", "following", "pushing", "photographing", "watching", "pulling", "painting", "calling")

# (active "-ing" verb, past participle, objects) for passives.
PASSIVE_VERBS = (("washing", "washed", ("car", "dog", "window")), ("painting", "painted", ("fence", "wall", "boat")),
                 ("carrying", "carried", ("box", "bag", "chair")), ("reading", "read", ("book", "letter", "newspaper")),
                 ("pushing", "pushed", ("cart", "stroller", "wheelbarrow")), ("kicking", "kicked", ("ball",)),
                 ("cutting", "cut", ("cake", "bread", "rope")), ("repairing", "repaired", ("bicycle", "roof")))

# Sentences about nothing in the pairs (weather, time, sounds): added to a premise they change no label.
IRRELEVANT = ("It is a sunny afternoon.", "A radio is playing somewhere.", "There are clouds in the sky.",
              "It is early in the morning.", "The wind is blowing.", "Birds are singing in the distance.",
              "It is the middle of summer.", "A car horn honks far away.")

NEGATIONS = ("not", "no", "never", "nobody", "nothing", "none", "n't", "cannot", "nowhere", "neither", "nor")
